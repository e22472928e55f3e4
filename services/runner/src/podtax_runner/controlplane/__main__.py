"""Run one control-plane run outside the runner and print its timeline (JSON lines) on stdout:

    python -m podtax_runner.controlplane --test volume-churn --env kubernetes --node NODE \\
        --kubeconfig kubeconfig.yaml --param count=100 --param concurrency=10

Nomad: --env nomad --nomad-addr http://127.0.0.1:4646 --param plugin_id=hostpath (token and TLS from
PODTAX_RUNNER_NOMAD_*). SIGTERM or Ctrl-C stops the run; what it created is deleted first.
Exit status: 0 done, 1 the run failed (reason on stderr; what it measured before, if anything, on stdout with its
header marked `aborted`, which the parser refuses as a result unless the run's deletes were refused after every create
and bind: then a result flagged DELETE_REFUSED), 2 usage mistake.
"""

from __future__ import annotations

import dataclasses
import signal
import sys
import threading

from podtax import config, events, templates
from podtax.oneline_args import OneLineParser, a_file

from podtax_runner.controlplane.common import Aborted
from podtax_runner.controlplane.execute import execute, measured_of
from podtax_runner.controlplane.nomad import NomadConfig
from podtax_runner.controlplane.pending import delete_refused


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python -m podtax_runner.controlplane", description=__doc__.splitlines()[0])
    ap.add_argument("--test", required=True, choices=[n for n, t in templates.REGISTRY.items() if t.control_plane])
    ap.add_argument("--env", default="kubernetes", choices=["kubernetes", "nomad"])
    ap.add_argument("--node", default="local", help="node the pods are pinned to (pod-startup, consumer)")
    ap.add_argument("--campaign", default="adhoc", help="campaign label of the objects")
    ap.add_argument("--run-id", default=None, help="default: <campaign>-<random>")
    ap.add_argument("--param", action="append", default=[], metavar="K=V", help="template parameter (repeat)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds before the run is stopped")
    ap.add_argument("--kubeconfig", type=a_file, default=None)
    ap.add_argument("--nomad-addr", default=None)
    args = ap.parse_args(argv)
    try:
        raw = templates.parse_params(" ".join(args.param))
        params = templates.get(args.test).validate(raw).model_dump()
        run = events.RunSpec(run_id=args.run_id or f"{args.campaign}-{events.new_id()[:12]}", campaign=args.campaign,
                             node=args.node, env=args.env, test=args.test, params=params, timeout_s=args.timeout)
    except (ValueError, templates.TemplateError) as exc:
        ap.error(str(exc).splitlines()[0])
    overrides = {"runner_kubeconfig": str(args.kubeconfig)} if args.kubeconfig is not None else {}
    try:
        settings = config.load(config.RunnerSettings, **overrides)
    except config.ConfigError as exc:  # it exited 2 saying nothing
        print(f"{ap.prog}: {exc.line}", file=sys.stderr)
        return 2
    nomad_cfg = NomadConfig.from_settings(settings)
    if args.nomad_addr:
        nomad_cfg = dataclasses.replace(nomad_cfg, address=args.nomad_addr)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    result: dict[str, object] = {}

    def work() -> None:
        try:
            result["timeline"] = execute(run, settings, stop, nomad_cfg=nomad_cfg)
        except BaseException as exc:  # noqa: BLE001 - reported below
            result["error"] = exc

    thread = threading.Thread(target=work, name="podtax-cp-main")
    thread.start()
    while thread.is_alive():
        thread.join(0.2)  # the main thread stays free for signal handlers
    error = result.get("error")
    if isinstance(error, Aborted):
        kept = measured_of(error)  # what it timed before it ended: on stdout, marked aborted (never a result)
        if kept is not None:
            sys.stdout.write(kept.jsonl())
        tail = "; its timeline of what it measured before it ended is on stdout, marked aborted" if kept else ""
        if kept is not None and delete_refused(kept, run.test):
            tail += " (its deletes were refused after every create and bind: the parser makes a result flagged " \
                    "DELETE_REFUSED of it, its delete phases left out)"
        print(f"{run.test} failed ({error.reason}): {error.detail}{tail}", file=sys.stderr)
        return 1
    if error is not None:
        print(f"{run.test} failed: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    sys.stdout.write(result["timeline"].jsonl())  # type: ignore[union-attr]
    return 0


if __name__ == "__main__":
    sys.exit(main())
