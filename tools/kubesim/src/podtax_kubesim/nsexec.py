"""Tiny launcher for exec-mode containers; run as `python -I nsexec.py ...` (stdlib only).

Stage 1 (no --init): write our pid into each --procs file (joining the pod's cgroups), then
exec `unshare` (with --unshare) re-running this file as stage 2, or exec the argv directly.
Stage 2 (--init): PID 1 of fresh PID/mount/UTS/IPC namespaces: bind-mount each --bind SRC:DST
(so the container sees its own cgroup at the usual place), set the hostname, run the argv as a
child, forward SIGTERM/SIGINT to it, and exit with its status.
--user UID / --group GID / --groups G1,G2: the argv runs as that user and group (privileges are
dropped last, after the cgroups and namespaces are set up).
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys

MS_BIND = 4096
UNSHARE = ["unshare", "--pid", "--fork", "--mount", "--uts", "--ipc", "--mount-proc", "--propagation", "private"]


def parse(argv: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    opts: dict[str, list[str]] = {}
    i = 0
    while i < len(argv) and argv[i] != "--":
        key = argv[i].lstrip("-")
        if key in ("init", "unshare"):
            opts[key] = ["1"]
            i += 1
        else:
            opts.setdefault(key, []).append(argv[i + 1])
            i += 2
    return opts, argv[i + 1:]


def identity(opts: dict[str, list[str]]) -> dict[str, object]:
    """Popen keyword arguments that drop to --user/--group/--groups ({} when none is given)."""
    if "user" not in opts and "group" not in opts:
        return {}
    groups = [int(g) for g in (opts.get("groups") or [""])[0].split(",") if g]
    return {"user": int(opts["user"][0]) if "user" in opts else None,
            "group": int(opts["group"][0]) if "group" in opts else None, "extra_groups": groups}


def drop(ident: dict[str, object]) -> None:
    """Become the user of identity() in this process (before an exec)."""
    if not ident:
        return
    os.setgroups(ident["extra_groups"])  # type: ignore[arg-type]
    if ident["group"] is not None:
        os.setgid(ident["group"])  # type: ignore[arg-type]
    if ident["user"] is not None:
        os.setuid(ident["user"])  # type: ignore[arg-type]


def bind(src: str, dst: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(src.encode(), dst.encode(), None, MS_BIND, None) != 0:
        err = ctypes.get_errno()
        print(f"kubesim nsexec: bind {src} -> {dst}: {os.strerror(err)}", file=sys.stderr)


def stage2(opts: dict[str, list[str]], argv: list[str]) -> int:
    for spec in opts.get("bind", []):
        src, _, dst = spec.partition(":")
        bind(src, dst)
    for name in opts.get("hostname", []):
        try:
            socket.sethostname(name)
        except OSError as exc:
            print(f"kubesim nsexec: sethostname: {exc}", file=sys.stderr)
    try:
        child = subprocess.Popen(argv, **identity(opts))  # type: ignore[call-overload]
    except OSError as exc:
        print(f"kubesim: cannot run {argv[0]}: {exc}", file=sys.stderr)
        return 127
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: child.send_signal(signum))
    code = child.wait()
    return 128 - code if code < 0 else code


def main(argv: list[str]) -> int:
    opts, command = parse(argv)
    if "init" in opts:
        return stage2(opts, command)
    for path in opts.get("procs", []):
        with open(path, "w") as fh:
            fh.write(str(os.getpid()))
    if "unshare" in opts:
        again = [sys.executable, "-I", os.path.abspath(__file__), "--init"]
        for key in ("bind", "hostname", "user", "group", "groups"):
            for value in opts.get(key, []):
                again += [f"--{key}", value]
        os.execvp(UNSHARE[0], UNSHARE + ["--", *again, "--", *command])
    drop(identity(opts))
    os.execvp(command[0], command)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
