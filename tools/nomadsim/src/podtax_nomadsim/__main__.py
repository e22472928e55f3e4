"""`python -m podtax_nomadsim --cluster FILE [--port N] [--acl-token T] [--refuse-creates-after N]`:
serve a SIMULATED Nomad HTTP API (CSI volumes and plugins) until interrupted."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys

from podtax_kubesim.oneline_args import OneLineParser, a_path, listen_mistake

from podtax_nomadsim import cluster
from podtax_nomadsim.core import NomadSim


def parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="podtax-nomadsim", description="A local, SIMULATED Nomad HTTP API (podtax nomadsim): "
                      "CSI volumes and plugins for tests and demos. Not a real cluster.")
    p.add_argument("--cluster", type=a_path, help="cluster file (YAML); default: one plugin 'hostpath', no latency")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    p.add_argument("--acl-token", default=None, help="turn ACLs on: requests need this X-Nomad-Token")
    p.add_argument("--refuse-creates-after", type=int, default=None, metavar="N",
                   help="fault: volume creates fail (500) once N volumes were created")
    p.add_argument("--seed", type=int, default=None, help="random seed of the latency distributions")
    p.add_argument("--tls-dir", type=a_path, default=None, metavar="DIR",
                   help="serve HTTPS with mutual TLS; a fresh CA (nomad-ca.pem), server and client certificates "
                        "(client.pem, client-key.pem) are written to DIR")
    return p


async def serve(args: argparse.Namespace) -> int:
    sim = NomadSim(args.cluster, host=args.host, port=args.port, acl_token=args.acl_token,
                   refuse_creates_after=args.refuse_creates_after, seed=args.seed, tls_dir=args.tls_dir)
    url = await sim.start()
    plugins = ", ".join(sim.state.plugins) or "none"
    stop = asyncio.Event()  # before the line that says it serves, as podtax-kubesim: a SIGTERM right after it killed it
    loop = asyncio.get_running_loop()
    ours: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(ValueError):  # not the main thread: it serves until cancelled
            signal.signal(sig, lambda _signum, _frame: loop.call_soon_threadsafe(stop.set))
            ours.append(sig)
    print(f"podtax nomadsim: SIMULATED Nomad API at {url} (region {sim.cluster['region']}, CSI plugins: "
          f"{plugins}, ACLs {'on' if sim.acl_token else 'off'}"
          f"{f', mutual TLS: CA and client certificate in {args.tls_dir}' if sim.tls else ''})", flush=True)
    await stop.wait()
    for sig in ours:  # as podtax-kubesim: a second one while it stops is ignored, not fatal (with add_signal_handler
        signal.signal(sig, signal.SIG_IGN)  # it was at its default again once asyncio.run closed its loop)
    await sim.stop()
    return 0


def _usage_problem(args: argparse.Namespace) -> str | None:
    """An option given empty (an unset shell variable) or naming the wrong kind of file, before anything starts:
    --host "" listened on every address, --acl-token "" turned ACLs off, --tls-dir FILE was "[Errno 17]", exit 1."""
    if not args.host.strip():
        return "--host is empty: give an address to listen on (127.0.0.1: loopback)"
    if args.acl_token is not None and not args.acl_token.strip():
        return "--acl-token is empty: give the token requests must carry, or leave the option out (ACLs off)"
    if args.tls_dir is not None and args.tls_dir.exists() and not args.tls_dir.is_dir():
        return f"--tls-dir {args.tls_dir} exists and is not a folder: name a folder (it is made when missing)"
    return None


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if not 0 <= args.port <= 65535:  # as podtax-kubesim: it was an OverflowError traceback from the server's bind
        print(f"podtax-nomadsim: --port must be 0-65535, got {args.port}", file=sys.stderr)
        return 2
    if args.refuse_creates_after is not None and args.refuse_creates_after < 0:
        print("podtax-nomadsim: --refuse-creates-after must be >= 0", file=sys.stderr)
        return 2
    if problem := _usage_problem(args):
        print(f"podtax-nomadsim: {problem}", file=sys.stderr)
        return 2
    try:  # a usage mistake, found before anything starts (it was exit 1 from inside the server)
        cluster.load(args.cluster)
    except OSError as exc:  # it said "[Errno 2] No such file or directory: 'x.yaml'"
        print(f"podtax-nomadsim: --cluster {args.cluster}: {exc.strerror}; give a cluster file (YAML, as in "
              f"examples/clusters/nomad.yaml)", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"podtax-nomadsim: --cluster: {exc}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(serve(args))
    except OSError as exc:
        mistake = listen_mistake(exc, args.host, args.port)  # a usage mistake: exit 2, naming the option
        print(f"podtax-nomadsim: {mistake or exc}", file=sys.stderr)
        return 2 if mistake else 1
    except ValueError as exc:
        print(f"podtax-nomadsim: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
