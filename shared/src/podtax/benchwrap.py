#!/usr/bin/env python3
"""podtax-bench: run one benchmark argv and print the provenance block before and after it.

Stdlib only, one file: the benchmark image copies it to /usr/local/bin/podtax-bench, and on a
plain host it is the `podtax-bench` console script (the emulator's exec mode runs a pod's
command line as it is). Usage: ``podtax-bench TOOL [ARGS...]`` — no shell is involved.
For fio it refuses (exit 28) a --size the --filename's file system cannot hold with a reserve to
spare, and deletes the data file after the run, whatever its outcome.

Block format (one line each on stderr, see podtax.provenance):

    #podtax phase=before tool_version='sysbench 1.0.20' kernel=6.1.0 hw_threads=4 machine=aarch64 tool_arch=arm ...
    #podtax phase=after nr_throttled=12 throttled_usec=48211

`machine` is `uname -m` (the kernel's: aarch64 in a 32-bit container on a 64-bit kernel), `tool_arch` the
architecture the tool's executable was built for (its ELF header; absent for a script): the same sysbench version
is other code as a 32-bit arm build than as an aarch64 one.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

PREFIX = "#podtax "
VERSION_FLAGS = {"hdparm": "-V"}
RESERVE_BYTES = 256 * 1024**2  # kept free beyond fio's file: 5% of the file system, at least this
EXIT_NO_SPACE = 28  # ENOSPC


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def cgroup_cpu(root: Path = Path("/sys/fs/cgroup")) -> dict[str, str]:
    """CPU limit (cores) and throttling counters of the current cgroup (v2, else v1).

    PODTAX_CGROUP_DIR, when set, names the cgroup's cpu directory to read instead (v1 or v2 files);
    the kubesim emulator's exec mode sets it."""
    out: dict[str, str] = {}
    override = os.environ.get("PODTAX_CGROUP_DIR")
    if override:
        cpu_dir = Path(override)
        stat_text, max_text = _read(cpu_dir / "cpu.stat"), _read(cpu_dir / "cpu.max")
    else:
        cpu_dir = root / "cpu"
        stat_text, max_text = _read(root / "cpu.stat"), _read(root / "cpu.max")
        if stat_text is None:  # cgroup v1
            stat_text = _read(cpu_dir / "cpu.stat") or _read(root / "cpu,cpuacct" / "cpu.stat")
    if max_text is None:  # cgroup v1
        quota, period = _read(cpu_dir / "cpu.cfs_quota_us"), _read(cpu_dir / "cpu.cfs_period_us")
        if quota and period and quota != "-1":
            max_text = f"{quota} {period}"
    if max_text:
        quota, _, period = max_text.partition(" ")
        if quota != "max" and period:
            out["cpu_limit"] = f"{int(quota) / int(period):.3f}"
    for line in (stat_text or "").splitlines():
        key, _, value = line.partition(" ")
        if key == "nr_throttled":
            out["nr_throttled"] = value
        elif key == "throttled_usec":
            out["throttled_usec"] = value
        elif key == "throttled_time":  # v1 reports nanoseconds
            out["throttled_usec"] = str(int(value) // 1000)
    return out


def tool_version(tool: str) -> str | None:
    try:
        proc = subprocess.run([tool, VERSION_FLAGS.get(Path(tool).name, "--version")],
                              capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (proc.stdout or proc.stderr).strip()
    return text.splitlines()[0] if text else None


# ELF e_machine -> its name as `uname -m` gives it, by the header's class (32- or 64-bit) where that tells two apart
_MACHINES = {3: ("i386", "i386"), 8: ("mips", "mips64"), 20: ("ppc", "ppc"), 21: ("ppc64", "ppc64"),
             22: ("s390", "s390x"), 40: ("arm", "arm"), 62: ("x32", "x86_64"), 183: ("aarch64", "aarch64"),
             243: ("riscv32", "riscv64"), 258: ("loongarch32", "loongarch64")}


def elf_arch(path: str | None) -> str | None:
    """The architecture the executable at `path` was built for, from its ELF header (e_ident's class and byte
    order, e_machine): `arm` for a 32-bit ARM build, `aarch64`, `x86_64`, `i386`...; None for anything else (a
    script, a missing file, anything but a regular file: a FIFO is opened without waiting for a writer and not
    read, as the root host agent's event loop would hang in it)."""
    try:
        fd = os.open(path or "", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        head = os.read(fd, 20) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(head) < 20 or head[:4] != b"\x7fELF" or head[4] not in (1, 2) or head[5] not in (1, 2):
        return None
    machine = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
    names = _MACHINES.get(machine)
    if names is None:
        return f"elf{32 * head[4]}-machine-{machine}"
    name = names[head[4] - 1]
    return f"{name}le" if name == "ppc64" and head[5] == 1 else name


def tool_of(argv: list[str]) -> str:
    """The tool a run's argv starts: its first word, or the client after `--` when podtax.netpair (a network test's
    host->host side: `python -I -m podtax.netpair ... -- iperf3 -c ...`) starts the server and the client."""
    if "podtax.netpair" in argv[:4] and "--" in argv[:-1]:
        return argv[argv.index("--") + 1]
    return argv[0]


def render(phase: str, fields: dict[str, str]) -> str:
    return PREFIX + " ".join([f"phase={phase}"] + [f"{k}={shlex.quote(v)}" for k, v in fields.items()])


def block(phase: str, version: str | None = None, executable: str | None = None) -> str:
    """The block's line of `phase`; before the run, with the tool's version and the architecture `executable` (the
    tool's path) was built for."""
    fields: dict[str, str] = {}
    if phase == "before":
        if version:
            fields["tool_version"] = version
        fields["kernel"] = os.uname().release
        fields["hw_threads"] = str(os.cpu_count() or 1)
        fields["machine"] = os.uname().machine
        if arch := elf_arch(executable):
            fields["tool_arch"] = arch
    fields.update(cgroup_cpu())
    return render(phase, fields)


def _option(args: list[str], name: str) -> str | None:
    return next((a.split("=", 1)[1] for a in args if a.startswith(f"--{name}=")), None)


def fio_space_problem(args: list[str]) -> str | None:
    """For fio: why its --size cannot fit in the free space where --filename lives (None when it fits)."""
    size, filename = _option(args, "size"), _option(args, "filename")
    m = re.match(r"^([1-9][0-9]*)([KMGT]?)$", size or "")
    if Path(args[0]).name != "fio" or not m or not filename:
        return None
    need = int(m.group(1)) * 1024 ** " KMGT".index(m.group(2) or " ")
    folder = Path(filename).absolute().parent
    while not folder.exists() and folder != folder.parent:  # fio makes missing folders: their file system's space
        folder = folder.parent  # statvfs of a folder not there was a traceback (hU, session 56)
    if not folder.is_dir():  # a file where a folder should be: fio says so itself (statvfs measured the file's)
        return None
    try:
        usage = shutil.disk_usage(folder)
    except OSError:  # a folder it may not search: fio says so itself
        return None
    reserve = max(RESERVE_BYTES, usage.total // 20)
    if need <= usage.free - reserve:
        return None
    return (f"fio size {size} needs {need:,} bytes but {folder} has {usage.free:,} bytes free, of "
            f"which {reserve:,} are kept in reserve; lower size or give the pod more scratch space")


def remove_data_file(args: list[str]) -> None:
    """Delete fio's data file, whatever the outcome (never anything but a regular file or a link)."""
    filename = _option(args, "filename")
    if Path(args[0]).name == "fio" and filename:
        path = Path(filename)
        if path.is_symlink() or path.is_file():
            path.unlink(missing_ok=True)


def print_help() -> int:
    """The docstring on stdout: 0; 1 when it cannot be written, nothing said for a reader gone (`podtax-bench --help |
    head`), one line else (a full disk). Both ended in a traceback."""
    try:
        print(__doc__, flush=True)  # not sys.stdout.write: with stdout closed (`>&-`) sys.stdout is None
        return 0
    except OSError as exc:
        with contextlib.suppress(OSError):  # the interpreter's last flush of what is still buffered cannot fail again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        if not isinstance(exc, BrokenPipeError):
            print(f"podtax-bench: cannot write its output: {exc.strerror}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-h", "--help"):  # asked for: stdout, exit 0 (it was stderr and 2, as a mistake)
        return print_help()
    if not args:  # a mistake: one line (it printed the whole docstring on stderr)
        print("podtax-bench: missing the benchmark to run: podtax-bench TOOL [ARGS...]. Try 'podtax-bench --help'.",
              file=sys.stderr)
        return 2
    print(block("before", tool_version(args[0]), shutil.which(tool_of(args))), file=sys.stderr, flush=True)
    if problem := fio_space_problem(args):
        print(f"podtax-bench: refused: {problem}", file=sys.stderr)
        print(block("after"), file=sys.stderr, flush=True)
        return EXIT_NO_SPACE
    try:
        code = subprocess.run(args, check=False).returncode
    except OSError as exc:
        print(f"podtax-bench: cannot run {args[0]}: {exc}", file=sys.stderr)
        code = 127
    finally:
        remove_data_file(args)
    print(block("after"), file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
