"""Which corpus files are logs, which are helper files (skipped, with a reason), and which tools
each log is also parsed as (session logs that hold several tools' or tests' output)."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "corpus"
GOLDEN = HERE / "golden"

VERSION_REASON = "a `--version` output, not a benchmark log: used as recorded_version in test_recorded_versions"
SKIP_NAMES = {
    "README.md": "the corpus README (documentation)",
    "COMMANDS.tsv": "the command line of each debian12 capture (documentation)",
    "output": "figures extracted by hwbench's own parser: compared in test_hwbench_output",
    "version": "the version hwbench recorded: used as recorded_version in test_recorded_versions",
    "version-stdout": VERSION_REASON,
    "version-stderr": "stderr of a `--version` call (empty)",
    "sysbench-version.txt": VERSION_REASON,
    "stress-ng-version.txt": VERSION_REASON,
    "fio-version.txt": VERSION_REASON,
}

# Parsed with autodetection (None) and, for these files, also with these tool/test hints.
HINTS: dict[str, tuple[str, ...]] = {
    "mixed/raspberry-pi-zero-w/AikonCWD-rpi-benchmark": ("hdparm", "sysbench-cpu", "sysbench-memory"),
    "debian12-x86_64/stress-ng-cpu-2-matrixprod.yaml": ("stress-ng-cpu",),
    "debian12-x86_64/stress-ng-cpu-1-perf.yaml": ("stress-ng-cpu",),  # `perfstats:` rows after `metrics:`
    "debian12-x86_64/stress-ng-cpu-1-ops3000-brief.log": ("stress-ng-cpu",),
    "stress-ng/perfkit/stress_ng_output.txt": ("stress-ng-cpu",),
    "debian12-x86_64/sysbench-cpu-default-time.log": ("sysbench-memory",),
    "debian12-x86_64/fio-seqread-1M-direct.json": ("sysbench-cpu",),
    "debian12-x86_64/stress-ng-hdd-bad-temp-path.log": ("stress-ng-cpu",),  # one line without `stress-ng:`
    "debian12-x86_64/sysbench-threads-0.log": ("sysbench-cpu",),  # one FATAL line, no banner
    "debian12-x86_64/sysbench-rand-type-foo.log": ("sysbench-cpu",),  # likewise
    "debian12-x86_64/stress-ng-cpu-uprobe-skipped-metrics.log": ("stress-ng-cpu",),  # a skipped row beside cpu's
    "debian12-x86_64/stress-ng-cpu-uprobe-skipped-metrics.yaml": ("stress-ng-cpu",),
    "debian12-x86_64/stress-ng-cpu-2-vm-2-side-by-side.log": ("stress-ng-cpu",),  # cpu under vm's load: flagged
    "debian12-x86_64/stress-ng-cpu-2-vm-2-side-by-side.yaml": ("stress-ng-cpu",),
    "debian12-x86_64/hdparm-unknown-flag.log": ("hdparm",),  # `bogus: unknown flag`, nothing else
    "debian12-x86_64/stress-ng-sched-unknown.log": ("stress-ng",),  # stress-ng's refusals without `stress-ng:`
    "debian12-x86_64/stress-ng-taskset-cpu-5.log": ("stress-ng",),
    "debian12-x86_64/stress-ng-ionice-realtime-no-level.log": ("stress-ng",),
    "debian12-x86_64/stress-ng-ionice-realtime-not-root.log": ("stress-ng",),
    "debian12-x86_64/stress-ng-taskset-3-1.log": ("stress-ng",),
}
for _name in ("apptainer", "devbox", "docker", "native", "podman", "proot"):
    HINTS[f"sysbench/container-benchmarks-fedora/{_name}.txt"] = ("sysbench-cpu", "sysbench-memory")


def all_files() -> list[Path]:
    return sorted(p for p in CORPUS.rglob("*") if p.is_file())


def rel(path: Path) -> str:
    return path.relative_to(CORPUS).as_posix()


def skip_reason(path: Path) -> str | None:
    return SKIP_NAMES.get(path.name)


def log_files() -> list[Path]:
    return [p for p in all_files() if skip_reason(p) is None]


def golden_path(path: Path) -> Path:
    return GOLDEN / (rel(path) + ".json")


def read_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")
