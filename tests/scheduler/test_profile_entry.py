"""A bad scheduler profile through the real entry point (python -m podtax_scheduler): one line naming the setting and
the fix, exit 2, before any kubeconfig is read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

RANGE = "no_interval_noise: Value error, got {}: give a number from 0 up to 0.5"


@pytest.mark.parametrize(("value", "needle"), [
    ("0.999", RANGE.format("0.999")),  # accepted before: every node without interval scored 100, no ranking
    ("1", RANGE.format("1.0")),
    ("-0.1", RANGE.format("-0.1")),
    (".nan", RANGE.format("nan")),  # was told 'less than 1'
    (".inf", RANGE.format("inf")),
    ("abc", "no_interval_noise: Input should be a valid number"),
])
def test_a_bad_no_interval_noise_is_one_line_at_start(tmp_path: Path, value: str, needle: str) -> None:
    (tmp_path / "p.yaml").write_text(f"score:\n  BenchmarkScore: {{no_interval_noise: {value}}}\n")
    env = {"PODTAX_NATS_URL": "nats://127.0.0.1:1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
           "PODTAX_SCHEDULER_PROFILE": str(tmp_path / "p.yaml")}
    done = subprocess.run([sys.executable, "-m", "podtax_scheduler"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("podtax-scheduler: PODTAX_SCHEDULER_PROFILE="), \
        done.stderr
    assert needle in done.stderr, done.stderr


def test_a_misspelt_setting_is_told_the_right_names(tmp_path: Path) -> None:
    """The hint listed BenchmarkScore's settings by hand without no_interval_noise: a typo of it got 'Extra inputs
    are not permitted' and no right name. Now the list comes from the profile's models."""
    (tmp_path / "p.yaml").write_text("score:\n  BenchmarkScore: {no_interval_nois: 0.1}\n")
    env = {"PODTAX_NATS_URL": "nats://127.0.0.1:1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
           "PODTAX_SCHEDULER_PROFILE": str(tmp_path / "p.yaml")}
    done = subprocess.run([sys.executable, "-m", "podtax_scheduler"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "BenchmarkScore.no_interval_nois: Extra inputs are not permitted" in done.stderr, done.stderr
    known = ("BenchmarkScore (weight, shrink_runs, missing_score, statistic, sensitivity, unmeasured, "
             "no_interval_noise, ignore_flags), LeastAllocated (weight), InterPodAffinity (weight, "
             "hard_pod_affinity_weight), PodTopologySpread (weight), TaintToleration (weight)")
    assert known in done.stderr, done.stderr
