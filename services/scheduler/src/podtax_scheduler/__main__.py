"""`podtax-scheduler`: run the benchmark-aware secondary scheduler until SIGTERM or SIGINT."""

from __future__ import annotations

import asyncio
import sys

from podtax import telemetry
from podtax.bus import BusError, stop_on_signals
from podtax.config import ConfigError, load
from podtax.oneline_args import OneLineParser, a_file

from podtax_scheduler.service import SchedulerConfig, serve


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "simulate":  # `podtax simulate` runs here: the policies are this package's plugins
        from podtax_scheduler.simulate_cli import main as simulate

        return simulate(argv[1:])
    parser = OneLineParser(
        prog="podtax-scheduler",
        description="Benchmark-aware secondary Kubernetes scheduler. Configured by PODTAX_* environment "
                    "variables (see services/scheduler/README.md).")
    parser.add_argument("--kubeconfig", type=a_file, help="kubeconfig file (overrides PODTAX_SCHEDULER_KUBECONFIG)")
    parser.add_argument("--profile", type=a_file, help="profile YAML (overrides PODTAX_SCHEDULER_PROFILE)")
    args = parser.parse_args(argv)
    overrides: dict[str, object] = {}
    if args.kubeconfig is not None:
        overrides["scheduler_kubeconfig"] = str(args.kubeconfig)
    if args.profile is not None:
        overrides["scheduler_profile"] = str(args.profile)
    try:
        settings = load(SchedulerConfig, **overrides)
        telemetry.setup("podtax-scheduler", settings.log_level, settings.log_format, settings.otel_exporter)

        async def run_until_signal() -> None:
            await serve(settings, stop_on_signals())

        asyncio.run(run_until_signal())
    except ConfigError as exc:
        print(f"podtax-scheduler: {exc.line}", file=sys.stderr)
        return 2
    except BusError as exc:
        print(f"podtax-scheduler: {exc}", file=sys.stderr)
        return 1
    except TimeoutError as exc:
        print(f"podtax-scheduler: {exc}", file=sys.stderr)
        return 1
    return 0


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
