"""Campaign files are capped before the expensive work (issue 12, item 12): the file size before
YAML parsing, the plan size before any parameter combination is built or validated."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from podtax import campaign, campaign_limits
from podtax.cli.main import main


def matrix_file(path: Path, values: int) -> Path:
    """A campaign whose matrix lists `values` thread counts (about 9.4 MB at 1.9 million)."""
    body = ", ".join(str(1 + i % 1024) for i in range(values))
    path.write_text(f"name: huge\nnodes: [a, b]\ntests:\n  - test: sysbench-cpu\n    matrix: {{threads: [{body}]}}\n")
    return path


def test_a_9_mb_matrix_is_refused_before_parsing_with_the_reason_and_the_cap(tmp_path: Path) -> None:
    path = matrix_file(tmp_path / "huge.yaml", 1_900_000)
    assert path.stat().st_size > 9_000_000
    with path.open("a") as f:
        f.write("  - [unclosed\n")  # were the YAML parsed, this would be the error
    with pytest.raises(campaign.CampaignError) as err:
        campaign.load(path)
    msg = str(err.value)
    assert f"{path.stat().st_size:,} bytes" in msg and f"cap of {campaign_limits.MAX_FILE_BYTES:,}" in msg


def test_the_plan_size_is_refused_before_any_combination_is_validated(tmp_path: Path) -> None:
    # 3 x 100 x 100 = 30,000 combinations x 2 nodes x 2 environments x 6 runs = 720,000 runs; threads 0 is
    # invalid, so a refusal about the plan proves validation never started.
    big = ", ".join(str(i) for i in range(100))
    text = (f"name: wide\nnodes: [a, b]\ntests:\n  - test: sysbench-cpu\n"
            f"    matrix: {{threads: [0, 1, 2], max_prime: [{big}], events: [{big}]}}\n")
    with pytest.raises(campaign.CampaignError) as err:
        campaign.parse(text, "wide.yaml")
    msg = str(err.value)
    assert "wide.yaml: the campaign would plan 720,000 runs" in msg and f"cap of {campaign.MAX_RUNS:,}" in msg
    assert "threads" not in msg


@pytest.mark.parametrize(("doc", "runs"), [
    ({"nodes": ["a"], "tests": [{"test": "x"}]}, 1 * 1 * 2 * 6),
    ({"nodes": ["a", "b"], "environments": ["host"], "tests": [{"matrix": {"threads": [1, 2, 4]}}],
      "repetitions": {"min": 3, "max": 50, "target_ci_width": 0.02}}, 3 * 2 * 1 * 50),
    ({"nodes": {"selector": "x=y"}, "tests": [{"matrix": {"a": [1, 2], "b": [1, 2, 3]}}, {}]}, (6 + 1) * 2 * 6),
    ({"nodes": "junk", "tests": "junk", "repetitions": {"min": "x"}}, 0),
])
def test_rough_runs_counts_like_the_planner(doc: dict, runs: int) -> None:
    assert campaign_limits.rough_runs(doc) == runs


def test_rough_runs_is_an_upper_bound_of_the_planner() -> None:
    text = ("name: ok\nnodes: [a, b, c]\nenvironments: [host, kubernetes]\nrepetitions: {min: 4, max: 9, "
            "target_ci_width: 0.05}\ntests:\n  - test: sysbench-cpu\n"
            "    matrix: {threads: [1, 2], max_prime: [2000, 5000]}\n  - test: stress-ng-cpu\n")
    c = campaign.parse(text)
    assert campaign_limits.rough_runs(yaml.safe_load(text)) == campaign.planned_runs(c, 3)


def test_a_device_is_read_only_up_to_the_cap(tmp_path: Path) -> None:
    with pytest.raises(campaign.CampaignError, match="at least"):
        campaign.load(Path("/dev/zero"))


def test_cli_submit_of_a_huge_file_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = matrix_file(tmp_path / "huge.yaml", 1_900_000)
    code = main(["campaign", "submit", str(path), "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2 and "above the cap" in err and "Traceback" not in err
