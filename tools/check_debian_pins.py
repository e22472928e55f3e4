"""Check that every Debian package version pinned in a Dockerfile exists for every image architecture.

    python tools/check_debian_pins.py [--arch amd64,arm64] [--mirror URL] [--suite bookworm]

Reads the `<TOOL>_VERSION` ARGs of the bench image and the host agent's Dockerfile, downloads the
suite's package index (Packages.xz) for each architecture from the Debian mirror, and prints one
line per package and architecture. Exit 0 when every pin exists everywhere, 1 otherwise, 2 on a
usage mistake. A pin that exists on amd64 only would break the arm64 (Raspberry Pi) image.
"""

from __future__ import annotations

import lzma
import re
import sys
from pathlib import Path

import httpx
from podtax.oneline_args import OneLineParser

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILES = (ROOT / "deploy" / "bench-image" / "Dockerfile", ROOT / "services" / "host_agent" / "Dockerfile")
PACKAGE_OF_ARG = {"SYSBENCH_VERSION": "sysbench", "STRESS_NG_VERSION": "stress-ng", "FIO_VERSION": "fio",
                  "HDPARM_VERSION": "hdparm", "IPERF3_VERSION": "iperf3", "SOCKPERF_VERSION": "sockperf",
                  "PYTHON3_VERSION": "python3"}


def pins(dockerfiles: tuple[Path, ...] = DOCKERFILES) -> dict[str, str]:
    """package -> pinned version, from the Dockerfiles' ARG defaults (the same pin in each file)."""
    out: dict[str, str] = {}
    for path in dockerfiles:
        for arg, version in re.findall(r"^ARG ([A-Z0-9_]+_VERSION)=(\S+)", path.read_text(), re.M):
            package = PACKAGE_OF_ARG.get(arg)
            if package is None:
                continue
            if out.get(package, version) != version:
                raise ValueError(f"{package} is pinned to {out[package]} and {version} in different Dockerfiles")
            out[package] = version
    return out


def versions(index: str) -> dict[str, set[str]]:
    """package -> versions, from a Debian Packages index."""
    out: dict[str, set[str]] = {}
    for stanza in index.split("\n\n"):
        name = re.search(r"^Package: (\S+)$", stanza, re.M)
        version = re.search(r"^Version: (\S+)$", stanza, re.M)
        if name and version:
            out.setdefault(name.group(1), set()).add(version.group(1))
    return out


def fetch_index(mirror: str, suite: str, arch: str) -> str:
    url = f"{mirror.rstrip('/')}/dists/{suite}/main/binary-{arch}/Packages.xz"
    resp = httpx.get(url, timeout=120, follow_redirects=True)
    resp.raise_for_status()
    return lzma.decompress(resp.content).decode("utf-8", "replace")


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="check_debian_pins", description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="amd64,arm64", help="architectures to check (comma-separated)")
    ap.add_argument("--mirror", default="http://deb.debian.org/debian")
    ap.add_argument("--suite", default="bookworm")
    args = ap.parse_args(argv)
    wanted = pins()
    missing = 0
    for arch in args.arch.split(","):
        try:
            available = versions(fetch_index(args.mirror, args.suite, arch))
        except httpx.HTTPError as exc:
            print(f"cannot read the {arch} package index from {args.mirror}: {exc}", file=sys.stderr)
            return 1
        for package, version in sorted(wanted.items()):
            ok = version in available.get(package, set())
            missing += not ok
            have = ", ".join(sorted(available.get(package, set()))) or "none"
            print(f"{'ok     ' if ok else 'MISSING'} {arch:6} {package}={version}" + ("" if ok else f" (has: {have})"))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
