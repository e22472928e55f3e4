"""The file a failed run's measured timeline is kept in (dispatch.keep_measured), and how parsers read it.

Review r8 of 17c28c78: the temporary file had a predictable name written through a planted symlink (the runner may
run privileged); a campaign submitted again (its run ids repeat) overwrote the earlier submission's timeline; a
campaign of 50 characters and a run id of 200 made a 257-byte name (over NAME_MAX: never written); and a parser older
than the `aborted` mark took the kept timeline for a clean result (its summary line was there). A real Timeline as
execute.keep marks it, the real parser; no cluster needed."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from podtax import events
from podtax.parsers import ParseFailure, parse_run
from podtax_runner.controlplane.common import Aborted
from podtax_runner.controlplane.dispatch import keep_measured
from podtax_runner.controlplane.execute import keep, measured_of
from podtax_runner.controlplane.timeline import Timeline


def _aborted(tag: str) -> Aborted:
    tl = Timeline("volume-churn", "kubernetes", {"count": 2}, "watch", True)
    for name in ("o-1", "o-2"):
        tl.add(name)
        tl.mark(name, "request_sent")
        tl.mark(name, "api_accepted")
        tl.mark(name, "bound")
    return keep(Aborted("kubernetes-forbidden", f"refused {tag}"), tl)


def _spec(run_id: str, campaign: str = "cp", submitted: datetime | None = None) -> events.RunSpec:
    return events.RunSpec(run_id=run_id, campaign=campaign, node="n", env="kubernetes", test="volume-churn",
                          params={"count": 2}, submitted=submitted)


def test_a_planted_symlink_is_not_written_through(tmp_path: Path) -> None:
    folder = tmp_path / "spool" / "measured"
    folder.mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    for name in (".tmp-run-1", ".tmp-run-1.jsonl"):  # the names a predictable temporary file would take
        (folder / name).symlink_to(victim)
    said = keep_measured(_aborted("sym"), _spec("run-1"), tmp_path / "spool")
    assert victim.read_text() == "precious\n"
    kept = [p for p in folder.iterdir() if not p.is_symlink()]
    assert len(kept) == 1 and f"is kept in {kept[0]}" in said, (said, kept)
    assert "refused sym" in kept[0].read_text()


def test_a_campaign_submitted_again_keeps_each_submissions_timeline(tmp_path: Path) -> None:
    t = datetime.now(UTC)
    keep_measured(_aborted("first"), _spec("run-2", submitted=t - timedelta(hours=1)), tmp_path)
    keep_measured(_aborted("second"), _spec("run-2", submitted=t), tmp_path)
    texts = sorted(p.read_text() for p in (tmp_path / "measured").iterdir())
    assert len(texts) == 2 and "refused first" in texts[0] and "refused second" in texts[1], texts


def test_the_longest_campaign_and_run_id_make_a_name_under_255_bytes(tmp_path: Path) -> None:
    said = keep_measured(_aborted("long"), _spec("r" * 200, "c" * 50), tmp_path)
    kept = list((tmp_path / "measured").iterdir())
    assert len(kept) == 1 and "is kept in" in said, said
    assert len(kept[0].name.encode()) <= 255 and kept[0].name.startswith("c" * 50 + "." + "r" * 100)
    other = keep_measured(_aborted("other"), _spec("r" * 199 + "s", "c" * 50), tmp_path)  # same first 143 chars
    assert "is kept in" in other and len(list((tmp_path / "measured").iterdir())) == 2


def test_the_kept_timeline_is_refused_with_the_runs_reason_and_by_an_older_parser_too() -> None:
    tl = measured_of(_aborted("parse"))
    assert tl is not None
    text = tl.jsonl()
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines[0]["aborted"]["reason"] == "kubernetes-forbidden" and "summary" not in [x["kind"] for x in lines]
    assert lines[0]["aborted"]["summary"]["requests"] is not None  # what the summary said, kept in the header
    with pytest.raises(ParseFailure) as refused:
        parse_run("volume-churn", text)
    assert refused.value.reason == "kubernetes-forbidden" and "refused parse" in refused.value.detail
    # a parser older than the mark ignores the header's `aborted`: it finds no summary line and refuses the timeline
    older = "".join(json.dumps({k: v for k, v in x.items() if k != "aborted"}) + "\n" for x in lines)
    with pytest.raises(ParseFailure) as cut:
        parse_run("volume-churn", older)
    assert cut.value.reason == "truncated", (cut.value.reason, cut.value.detail)
