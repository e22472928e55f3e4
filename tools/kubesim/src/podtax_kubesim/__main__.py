"""`podtax-kubesim --cluster cluster.yaml --kubeconfig out.yaml [--port N] [--kubelet MODE]`:
serve a SIMULATED Kubernetes API until interrupted, and write a kubeconfig for it."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from pathlib import Path

from podtax_kubesim import cluster
from podtax_kubesim.core import Emulator, is_loopback, write_emulator_kubeconfig
from podtax_kubesim.oneline_args import OneLineParser, a_path, listen_mistake, one_line


def parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="podtax-kubesim", description="A local, SIMULATED Kubernetes API server "
                                "(podtax kubesim) for tests, demos and scale runs. Not a real cluster.")
    p.add_argument("--cluster", type=a_path, help="cluster file (YAML); default: a small mixed cluster")
    p.add_argument("--kubeconfig", type=a_path, default=Path("kubesim.kubeconfig"),
                   help="where to write a kubeconfig for this emulator (default: %(default)s)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default: %(default)s; the exec kubelet allows loopback only)")
    p.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    p.add_argument("--kubelet", choices=["simulated", "exec", "none"], default="simulated",
                   help="simulated: containers complete after a simulated duration; exec: run container "
                        "commands as local processes; none: bound pods stay Running")
    p.add_argument("--workdir", type=a_path, default=None, help="working directories of exec-mode containers")
    p.add_argument("--history", type=int, default=100_000, help="watch events kept for resumption")
    p.add_argument("--no-isolation", action="store_true", help="exec mode: no cgroups or namespaces")
    p.add_argument("--allow-privileged", action="store_true",
                   help="admit pods with hostPath volumes, privileged containers or host namespaces (refused "
                        "with 403 by default: in exec mode they would run as root with this machine's files)")
    p.add_argument("--pod-network", action="store_true",
                   help="exec mode: give each pod its own network namespace, a veth pair into a per-node "
                        "bridge and an address from 198.18.0.0/15 (root only; removed when pods or the "
                        "emulator end, and leftovers of a killed emulator at the next start)")
    p.add_argument("--token-file", type=a_path, default=None,
                   help="read the API bearer token from this file (default: a random token, written into "
                        "the kubeconfig, which is created with mode 0600)")
    return p


async def serve(args: argparse.Namespace) -> int:
    token = args.token_file.read_text().strip() or None if args.token_file else None
    emulator = Emulator(args.cluster, args.kubelet, args.workdir, host=args.host, port=args.port,
                        history=args.history, isolation=not args.no_isolation, token=token,
                        allow_privileged=args.allow_privileged, pod_network=args.pod_network)
    url = await emulator.start()
    write_emulator_kubeconfig(args.kubeconfig, emulator)
    nodes = len(emulator.store.objects.get("/nodes", {}))
    # before the line that says it serves: a SIGTERM right after it killed the process (status -15; 241 through
    # `podtax kubesim`), a Ctrl-C gave asyncio's KeyboardInterrupt
    stopped_by: list[signal.Signals] = []
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal(signum: int, _frame: object) -> None:
        stopped_by.append(signal.Signals(signum))
        loop.call_soon_threadsafe(stop.set)

    ours: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(ValueError):  # not the main thread: it serves until cancelled
            signal.signal(sig, on_signal)
            ours.append(sig)
    print(f"podtax kubesim: SIMULATED Kubernetes API at {url} ({nodes} nodes, kubelet={args.kubelet}); "
          f"kubeconfig: {args.kubeconfig}", flush=True)
    await stop.wait()
    # a second one while it stops is ignored: a stop of the whole process group signals it twice (directly, and
    # through `podtax kubesim`), and with loop.add_signal_handler, once asyncio.run closed its loop, SIGTERM was at its
    # default again and killed it (143, review r9); straight from on_signal to SIG_IGN, never through SIG_DFL
    for sig in ours:
        signal.signal(sig, signal.SIG_IGN)
    await emulator.stop()
    return 130 if stopped_by[:1] == [signal.SIGINT] else 0  # Ctrl-C: 130, as while --cluster is read; SIGTERM: 0


def _usage_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with --kubeconfig or --cluster, found before anything starts (an audit: a bad cluster
    file gave a traceback, and `--kubeconfig /tmp` left the token in /tmp.tmp)."""
    if not args.host.strip():  # "" listened on every address
        return "--host is empty: give an address to listen on (127.0.0.1: loopback)"
    if args.kubelet == "exec" and not is_loopback(args.host):
        return (f"--kubelet exec runs pods as processes on this machine: it listens on loopback only (127.0.0.1 "
                f"or ::1), not --host {args.host}")
    if args.history < 1:  # a traceback at the first event
        return f"--history must be at least 1, got {args.history}"
    if args.token_file is not None and not args.token_file.is_file():  # "[Errno 2] No such file ...", exit 1
        return f"--token-file {args.token_file} is not a readable file: give the file holding the API token"
    if args.token_file is not None:  # "'utf-8' codec can't decode byte 0xa4 ...", exit 1 (hU, session 56)
        try:
            if not args.token_file.read_text().strip():  # served with a random token: every client got 401 (hT)
                return (f"--token-file {args.token_file} is empty: write the API token into it, or leave "
                        "--token-file out for a random one")
        except UnicodeDecodeError:
            return f"--token-file {args.token_file} is not text: give the file holding the API token (one line)"
        except OSError as exc:  # a PermissionError was a traceback (fxU, session 56)
            return (f"--token-file {args.token_file} cannot be read ({exc.strerror}): give the file holding the "
                    "API token")
    if args.workdir is not None and args.workdir.exists() and not args.workdir.is_dir():  # pods failed later
        return f"--workdir {args.workdir} exists and is not a folder: name a folder (it is made when missing)"
    out = args.kubeconfig
    if out.is_dir() or (out.exists() and not out.is_file()):
        return f"--kubeconfig {out} is not a file: name the file to write (e.g. kubesim.kubeconfig)"
    if not out.absolute().parent.is_dir():  # /dev/null/k.yaml: /dev/null is there, it is no folder
        folder = out.absolute().parent
        why = "is not a folder" if folder.exists() else "does not exist; create it first"
        return f"--kubeconfig {out}: the folder {folder} {why}"
    try:
        cluster.load(args.cluster)
    except OSError as exc:  # it said "[Errno 2] No such file or directory: 'x.yaml'"
        return f"--cluster {args.cluster}: {exc.strerror}; give a cluster file (YAML, as in examples/clusters/)"
    except ValueError as exc:
        return f"--cluster: {exc}"
    return None


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if not 0 <= args.port <= 65535:  # bind() would raise OverflowError deep in asyncio
        print(f"podtax-kubesim: --port must be 0-65535, got {args.port}", file=sys.stderr)
        return 2
    if args.no_isolation and args.kubelet != "exec":  # taken without a word: only exec-mode pods are processes
        print("podtax-kubesim: --no-isolation is for --kubelet exec (only its pods run as processes): add --kubelet "
              "exec or drop --no-isolation", file=sys.stderr)
        return 2
    if args.pod_network and args.kubelet != "exec":
        print("podtax-kubesim: --pod-network needs --kubelet exec (pods must be real processes)", file=sys.stderr)
        return 2
    try:
        problem = _usage_problem(args)  # reads --cluster: a FIFO waits for its writer, as `cat` would
    except KeyboardInterrupt:  # Ctrl-C meanwhile ends as it does later: no traceback
        return 130
    if problem:
        print(f"podtax-kubesim: {one_line(problem)}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(serve(args))
    except OSError as exc:
        mistake = listen_mistake(exc, args.host, args.port)  # a usage mistake: exit 2, naming the option
        print(f"podtax-kubesim: {one_line(mistake or str(exc))}", file=sys.stderr)
        return 2 if mistake else 1
    except ValueError as exc:
        print(f"podtax-kubesim: {one_line(str(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
