"""A fio run of a mixed mode (rw, randrw) at another read share than fio's default 50% must not pass for a cell of
the template, which sets no rwmixread: its read_iops (the randrw cell's headline) and write_iops measure another mix.

Before, nothing was flagged: the widely copied command of tests/corpus-found/fio-3.28-json-in-kubectl-logs.log
(`--readwrite=randrw --rwmixread=75`, its JSON echoing `"rwmixread" : "75"`) and the real capture
fio-3.33-randrw-rwmixread-30-json-plus.json (fio 3.33 `--output-format=json+`, `--rwmixread=30`, command in the
corpus-found README) parsed for a randrw cell with no flag. Now a run or an import (params given) is flagged
PARAM_MISMATCH naming the option to drop; a run at 50/50 (echoed or fio's default) is not."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import parse_run, parse_text

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"


@pytest.mark.parametrize(("name", "reads"), [("fio-3.28-json-in-kubectl-logs.log", "75% reads (rwmixread=75)"),
                                             ("fio-3.33-randrw-rwmixread-30-json-plus.json",
                                              "30% reads (rwmixread=30)"),
                                             ("fio-3.33-randrw-rwmixread-0.json", "0% reads (rwmixread=0)")])
def test_another_read_share_is_a_param_mismatch(name: str, reads: str) -> None:
    got = parse_run("fio", (FOUND / name).read_text(encoding="utf-8"), requested={"rw": "randrw"})
    assert f"PARAM_MISMATCH: rwmix: fio mixed {reads}; podtax's fio runs its mixed modes at fio's default 50/50, " \
           f"so these read and write figures measure another mix: rerun without --rwmixread" in got.flags, got.flags


def test_the_json_plus_report_reads_as_json() -> None:
    values = parse_text((FOUND / "fio-3.33-randrw-rwmixread-30-json-plus.json").read_text(encoding="utf-8")).values()
    assert 0 < values["read_iops"] < values["write_iops"]  # 30% reads


@pytest.mark.parametrize("share", ["50", None])
def test_fifty_fifty_is_not_flagged(share: str | None) -> None:
    text = (FOUND / "fio-3.33-randrw-rwmixread-30-json-plus.json").read_text(encoding="utf-8")
    said = '        "rwmixread" : "30",\n'
    assert said in text
    text = text.replace(said, "" if share is None else said.replace("30", share))
    got = parse_run("fio", text, requested={"rw": "randrw"})
    assert not any(f.startswith("PARAM_MISMATCH: rwmix") for f in got.flags), got.flags


def test_a_real_randrw_run_at_the_default_mix_is_not_flagged() -> None:
    got = parse_run("fio", (FOUND / "fio-3.33-unified-mixed.json").read_text(encoding="utf-8"),
                    requested={"rw": "randrw"})
    assert not any(f.startswith("PARAM_MISMATCH: rwmix") for f in got.flags), got.flags


@pytest.mark.parametrize(("name", "flag"), [
    ("fio-3.33-global-rwmixread-50-job-rwmixwrite-20.json", "fio mixed 80% reads (rwmixwrite=20)"),
    ("fio-3.33-global-rwmixread-75-job-rwmixwrite-50.json", None)])
def test_the_jobs_own_share_overrides_the_global_one(name: str, flag: str | None) -> None:
    """fio takes a job's own rwmixread/rwmixwrite over [global]'s: real fio 3.33 runs (r5's job files, commands in
    the corpus-found README) of global rwmixread=50 with the job's rwmixwrite=20 ran 80/20, and of global
    rwmixread=75 with the job's rwmixwrite=50 ran 50/50. Before, the global rwmixread was taken first: the first
    unflagged, the second flagged '75% reads'."""
    got = parse_run("fio", (FOUND / name).read_text(encoding="utf-8"), requested={"rw": "randrw"})
    values = got.values()
    reads = values["read_iops"] / (values["read_iops"] + values["write_iops"])
    assert reads == pytest.approx(0.8 if flag else 0.5, abs=0.03)  # what fio ran
    mix = [f for f in got.flags if f.startswith("PARAM_MISMATCH: rwmix")]
    assert mix == ([f"PARAM_MISMATCH: rwmix: {flag}; podtax's fio runs its mixed modes at fio's default 50/50, "
                    "so these read and write figures measure another mix: rerun without --rwmixwrite"]
                   if flag else []), mix
