"""INSUFFICIENT of a campaign whose environments leave one side of the pair out (pU, session 53: a volume-churn
campaign of kubernetes only, 6 runs, whose report said "Too few runs: kubernetes has 6 and nomad 0; at least 6 a side
are needed, so 6 more nomad runs are needed", runs that campaign would never make). Now the sentence says the campaign
has no nomad environment to compare with; a campaign without a stored spec (its runs imported or sent without a
submission) keeps asking for runs. Real parser output in a real DuckDB file, compare_campaign as the API calls it."""

from __future__ import annotations

from pathlib import Path

from podtax import events
from podtax_analyzer.comparisons import compare_campaign
from podtax_analyzer.store import Store
from timeline_synth import run_events


def _insufficient(path: Path, campaign: str, runs: int, envs: list[str] | None) -> str:
    s = Store(path)
    try:
        batch: list = []
        if envs is not None:
            spec = {"name": campaign, "environments": envs}
            batch.append(events.campaign_submitted(events.CampaignSubmitted(campaign=campaign, spec=spec)))
        for seq in range(runs):
            batch += run_events(campaign, "kubernetes", "volume-churn", seq)
        s.write_batch(batch)
        cells = compare_campaign(s.cursor(), campaign).cells
    finally:
        s.close()
    cell = next(c for c in cells if c.metric == "provisioned_p50_ms")
    assert (cell.baseline, cell.candidate, cell.n_host, cell.n_pod) == ("kubernetes", "nomad", runs, 0)
    assert "INSUFFICIENT" in cell.flags
    text = cell.flag_details["INSUFFICIENT"]
    if envs == ["kubernetes"]:  # the cell's sentence says the same, not "a ratio needs runs on both sides"
        assert cell.sentence == f"Not comparable: {text[0].lower()}{text[1:]}", cell.sentence
    return text


def test_enough_runs_of_a_kubernetes_only_campaign_ask_for_no_nomad_runs(tmp_path: Path) -> None:
    text = _insufficient(tmp_path / "podtax.duckdb", "k8s-only", 6, ["kubernetes"])
    assert text == ("No ratio: kubernetes has 6 runs, but the campaign has no nomad environment to compare with (its "
                    "environments: kubernetes): submit a campaign with nomad in its environments for a ratio."), text


def test_too_few_runs_of_a_kubernetes_only_campaign_ask_for_kubernetes_runs_only(tmp_path: Path) -> None:
    text = _insufficient(tmp_path / "podtax.duckdb", "k8s-few", 3, ["kubernetes"])
    assert text.startswith("Too few runs: kubernetes has 3; at least 6 are needed, and the campaign has no nomad "
                           "environment to compare with"), text
    assert "more nomad" not in text


def test_a_campaign_without_a_stored_spec_still_asks_for_nomad_runs(tmp_path: Path) -> None:
    text = _insufficient(tmp_path / "podtax.duckdb", "sent", 6, None)
    assert text == ("Too few runs: kubernetes has 6 and nomad 0; at least 6 a side are needed, so 6 more nomad runs "
                    "are needed."), text


def test_a_campaign_with_both_environments_asks_for_the_missing_side(tmp_path: Path) -> None:
    text = _insufficient(tmp_path / "podtax.duckdb", "both", 6, ["kubernetes", "nomad"])
    assert text.endswith("so 6 more nomad runs are needed."), text
