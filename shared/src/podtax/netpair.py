"""`python -m podtax.netpair --test iperf3 --port 5201 --protocol tcp -- iperf3 -c 127.0.0.1 ...`:
the host->host side of a network test in one process tree, as the host agent runs it: start the
server on loopback (argv from podtax.netbench.server_argv, never a shell), wait until it listens,
run the client, print the client's output, exit with the client's status, and always stop the
server (the host agent also kills everything the run started when it ends)."""

from __future__ import annotations

import subprocess
import sys

from podtax import netbench, templates
from podtax.oneline_args import OneLineParser


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    cut = args.index("--") if "--" in args else len(args)
    head, sep, client = args[:cut], "--" if cut < len(args) else "", args[cut + 1:]
    p = OneLineParser(prog="podtax.netpair", description=__doc__.splitlines()[0])
    p.add_argument("--test", choices=netbench.NET_TESTS, required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--protocol", choices=["tcp", "udp"], default="tcp")
    p.add_argument("--bind", choices=["127.0.0.1", "::1"], default="127.0.0.1", help="the server's address")
    opts = p.parse_args(head)
    if not sep or not client or client[0] != opts.test:
        p.error(f"give the {opts.test} client command after `--`")
    try:
        # the server side only (its argv: port, protocol): a UDP iperf3 client's rate is in the client's argv
        rate = {"bitrate": "0"} if opts.test == "iperf3" else {}
        params = templates.get(opts.test).validate({"port": opts.port, "protocol": opts.protocol, **rate})
    except templates.TemplateError as exc:
        p.error(exc.detail)
    try:
        with netbench.host_server(netbench.server_argv(opts.test, params, opts.bind), netbench.READY[opts.test]):
            proc = subprocess.run(client, stdin=subprocess.DEVNULL, check=False)
    except netbench.NetbenchError as exc:
        print(f"podtax.netpair: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"podtax.netpair: cannot run {client[0]}: {exc.strerror}", file=sys.stderr)
        return 127
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
