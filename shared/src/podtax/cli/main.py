"""The `podtax` command: one typer app; each sub-command lives in its own module.

Usage mistakes (no command, a missing argument, an unknown option) print ONE line on stderr and
exit with status 2, never a traceback. typer >= 0.2x raises the exceptions of its own bundled copy
of click rather than click's, so they are recognised by their click class names (`UsageError`,
`Exit`, `Abort`), which both copies share, instead of by identity.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import typer

from podtax import quietstart
from podtax.cli import (
    campaign,
    compare,
    delegate,
    export,
    importer,
    interrupted,
    kubesim,
    natsauth_cmd,
    parse,
    report,
    results,
    retire,
    scores,
    up,
)
from podtax.cli.common import check_data_dir, say
from podtax.config import ConfigError

USAGE = 2
WRITE_FAILED = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EPIPE}  # a stream that cannot be written
app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="podtax: what a workload pays for running in a Kubernetes pod instead of on the host.")


def _version(value: bool) -> None:
    if value:
        try:
            print(f"podtax {version('podtax')}")
        except PackageNotFoundError:
            print("podtax (not installed as a package)")
        raise typer.Exit(0)


@app.callback()
def _root(show_version: bool = typer.Option(False, "--version", is_eager=True, callback=_version,
                                            help="Print podtax's version and exit.")) -> None:
    """podtax: what a workload pays for running in a Kubernetes pod instead of on the host."""
    check_data_dir()


for module in (up, campaign, results, scores, retire, parse, importer, report, export, compare, kubesim,
               natsauth_cmd):
    module.register(app)
delegate.register(app, "simulate", "podtax_scheduler", "podtax simulate needs the scheduler package: pip install -e "
                  "services/scheduler", "Simulate a cluster on a campaign's measured speeds and compare placement "
                  "policies (run by the scheduler package; `podtax simulate --help`).")
delegate.register(app, "volumes", "podtax_runner", "podtax volumes needs the runner package: pip install -e "
                  "services/runner", "Volumes and pods of control-plane runs: `podtax volumes cleanup` removes "
                  "leftovers (run by the runner package; `podtax volumes --help`).")


def _is(exc: BaseException, *names: str) -> bool:
    """Whether `exc` is an instance of a class with one of these names (click's or typer's bundled copy)."""
    return any(cls.__name__ in names for cls in type(exc).__mro__)


def _subcommands(ctx: object) -> list[str]:
    command = getattr(ctx, "command", None)
    commands = getattr(command, "commands", None) or {}
    return sorted(name for name, cmd in commands.items() if not getattr(cmd, "hidden", False))


def _path_in(typer_app: typer.Typer, argv: list[str], prog_name: str) -> str:
    """The command path the leading words of `argv` name (`podtax campaign status`): click raises some
    usage errors (an option missing its value) without the context that knows it."""
    command: object = typer.main.get_command(typer_app)
    path = [prog_name]
    for word in argv:
        sub = (getattr(command, "commands", None) or {}).get(word)
        if sub is None:
            if word.startswith("-"):
                continue
            break
        path.append(word)
        command = sub
    return " ".join(path)


def usage_line(exc: BaseException, path_if_unknown: str = "podtax") -> str:
    """One line that says what was wrong and where to read more."""
    ctx = getattr(exc, "ctx", None)
    path = getattr(ctx, "command_path", None) or path_if_unknown
    if _is(exc, "NoArgsIsHelpError"):
        names = _subcommands(ctx)
        what = f"missing command (one of: {', '.join(names)})" if names else "missing arguments"
    else:
        what = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        what = " ".join(what.split())
        what = what[:1].lower() + what[1:]
    return f"{path}: {what.rstrip('.')}. Try '{path} --help'."


def run_app(typer_app: typer.Typer, argv: list[str], prog_name: str) -> int:
    """Run a typer app with `argv`; usage mistakes become one line and status 2 (see the docstring).
    Service packages run their own commands (`podtax simulate`, `podtax volumes`) through this too."""
    quietstart.done()  # as run() does: `podtax-runner volumes` and `podtax-scheduler simulate` come here directly
    command = typer.main.get_command(typer_app)  # as typer_app(...) does, with a Ctrl-C kept from typer's silent 130
    invoke = command.invoke

    def invoke_saying_ctrl_c(ctx: Any) -> Any:
        try:
            return invoke(ctx)
        except KeyboardInterrupt as exc:
            raise interrupted.Interrupted from exc

    command.invoke = invoke_saying_ctrl_c  # type: ignore[method-assign]
    try:
        result = command(args=argv, standalone_mode=False, prog_name=prog_name)
    except interrupted.Interrupted as exc:
        say(interrupted.what(_path_in(typer_app, argv, prog_name)), "interrupted")
        exc.said()
        return 130
    except KeyboardInterrupt:
        print(f"{prog_name}: interrupted", file=sys.stderr)
        return 130
    except ConfigError as exc:  # a SystemExit(2), which would end the command without a word
        print(f"{prog_name}: {exc.line}", file=sys.stderr)
        return USAGE
    except SystemExit as exc:
        if exc.code not in (None, 0) and not isinstance(exc.code, int):
            print(f"{prog_name}: {exc.code}", file=sys.stderr)
            return 1
        return exc.code if isinstance(exc.code, int) else 0
    except Exception as exc:  # click's or typer's bundled click: see the module docstring
        if _is(exc, "Exit"):
            return int(getattr(exc, "exit_code", 0) or 0)
        if _is(exc, "Abort"):
            print(f"{prog_name}: aborted", file=sys.stderr)
            return 130
        if _is(exc, "UsageError"):
            print(usage_line(exc, _path_in(typer_app, argv, prog_name)), file=sys.stderr)
            return USAGE
        if _is(exc, "ClickException"):
            print(f"{prog_name}: {exc.format_message()}", file=sys.stderr)  # type: ignore[attr-defined]
            return int(getattr(exc, "exit_code", 1))
        if isinstance(exc, OSError) and exc.errno in WRITE_FAILED and exc.filename is None:
            # a write to standard output (or another open stream) failed: `> f` on a full disk, /dev/full, a pipe
            # whose reader left; a traceback came here, as if podtax had a bug
            if exc.errno != errno.EPIPE:  # `podtax results | head`: the reader has what it wanted
                print(f"{prog_name}: cannot write its output: {exc.strerror}", file=sys.stderr)
            return 1
        raise
    return result if isinstance(result, int) else 0


def output_failed() -> str | None:
    """One line when what is still in standard output's buffer cannot be written (`podtax --version > /dev/full`),
    "" when its reader is gone (EPIPE: `podtax results | head` has what it wanted, nothing to say), else None; stdout
    is then pointed at /dev/null, so the interpreter's last flush cannot fail again (Python printed "Exception
    ignored ..." and exited 120)."""
    try:
        sys.stdout.flush()
        return None
    except (OSError, ValueError) as exc:
        line = "" if isinstance(exc, BrokenPipeError) else \
            f"cannot write its output: {getattr(exc, 'strerror', None) or exc}"
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return line


def main(argv: list[str] | None = None) -> int:
    """Run the CLI with `argv` (without the program name); returns the exit status."""
    return run_app(app, argv if argv is not None else sys.argv[1:], "podtax")


def run() -> None:
    quietstart.done()  # from here run_app says a Ctrl-C (KeyboardInterrupt)
    status = main()
    line = output_failed()  # text still buffered is written now, where its failure can set the status
    if line and status == 0:  # else the command's own line said what went wrong
        print(f"podtax: {line}", file=sys.stderr)
    sys.exit(status or (0 if line is None else 1))  # a reader gone: 1, said nothing of (as run_app's EPIPE)


if __name__ == "__main__":
    run()
