"""Commands whose work lives in a service package, run as that package's own command.

The library imports no service (the services depend on it, never the reverse). A command such as
`podtax simulate` (the scheduler's plugins) or `podtax volumes cleanup` (the runner's executor)
is registered here as a pass-through: its arguments go unchanged to `python -m <package> <name>
...` in a child process that shares the terminal, and its exit status is the command's (128 + N when
signal N ended it). When the package is not installed, one line says which one to install.
"""

from __future__ import annotations

import contextlib
import importlib.util
import signal
import subprocess
import sys
import threading

import typer

PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def nul_argument(argv: list[str]) -> str | None:
    """What to say of the first argument holding a NUL (no process's argument can carry one: subprocess raises
    ValueError), after `podtax `, else None. argv[0] is the command's name."""
    for i, arg in enumerate(argv):
        if "\0" in arg:
            option = argv[i - 1] if i and argv[i - 1].startswith("-") and "=" not in argv[i - 1] else None
            named = f"invalid value for {option!r}: " if option else ""
            sub = argv[1] if i > 1 and not argv[1].startswith("-") else ""  # volumes cleanup
            command = f"{argv[0]} {sub}".rstrip()
            return (f"{command}: {named}{arg!r} holds a NUL character, which no argument of a command can carry: "
                    f"give it without it. Try 'podtax {command} --help'.")
    return None


def run_module(module: str, argv: list[str], install_hint: str) -> int:
    """`python -m module *argv` with this terminal; 2 and one line when the module is missing, or when an argument
    holds a NUL character, which no program's argument can carry (subprocess raised ValueError: a traceback)."""
    if (nul := nul_argument(argv)) is not None:
        print(f"podtax {nul}", file=sys.stderr)
        return 2
    if importlib.util.find_spec(module) is None:
        print(f"podtax: {install_hint}", file=sys.stderr)
        return 2
    child = subprocess.Popen([sys.executable, "-m", module, *argv])

    def forward(signum: int, _frame: object) -> None:  # the child stops the way it would have in-process
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    main_thread = threading.current_thread() is threading.main_thread()  # signals are the main thread's
    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)} if main_thread else {}
    try:
        code = child.wait()
        return 128 - code if code < 0 else code  # ended by signal N: 128 + N, as a shell says it (not 256 - N)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def register(app: typer.Typer, name: str, module: str, install_hint: str, help_text: str) -> None:
    """Add `podtax <name> ...` that runs `python -m <module> <name> ...`."""

    def command(ctx: typer.Context) -> int:
        return run_module(module, [name, *ctx.args], install_hint)

    command.__doc__ = help_text
    app.command(name, context_settings=PASS_THROUGH, add_help_option=False, help=help_text)(command)
