"""The `podtax` command: one typer app; each sub-command lives in its own module."""

from __future__ import annotations

import sys

import click
import typer

from podtax.cli import campaign, importer, kubesim, parse, report, results, up

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="podtax: what a workload pays for running in a Kubernetes pod instead of on the host.")
for module in (up, campaign, results, parse, importer, report, kubesim):
    module.register(app)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI with `argv` (without the program name); returns the exit status."""
    try:
        result = app(args=argv if argv is not None else sys.argv[1:], standalone_mode=False,
                     prog_name="podtax")
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        return 130
    except SystemExit as exc:
        if exc.code not in (None, 0):
            print(f"podtax: {exc}", file=sys.stderr)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return result if isinstance(result, int) else 0


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
