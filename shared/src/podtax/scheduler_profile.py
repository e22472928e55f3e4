"""The scheduling profile: which score plugins run with which weight and arguments (the scheduler's, read here in
the library so that `podtax scores` says what the scheduler does with the same file; podtax_scheduler.profile is
this module).

Defaults live here; PODTAX_SCHEDULER_PROFILE may name a YAML file that overrides them, e.g.::

    score:
      BenchmarkScore: {weight: 5, shrink_runs: 3, sensitivity: 5, statistic: median,
                       unmeasured: last, missing_score: 20, no_interval_noise: 0.05,
                       ignore_flags: [CONFOUNDED, BIMODAL, OVERLAP, THROTTLED, EMULATED]}
      LeastAllocated: {weight: 1}
      InterPodAffinity: {weight: 2, hard_pod_affinity_weight: 1}
      PodTopologySpread: {weight: 2}
      TaintToleration: {weight: 3}

(podtax_scheduler.scoring explains each BenchmarkScore argument; affinity_score and spread_score the next two, which
score only pods with preferred pod (anti-)affinity or ScheduleAnyway spread constraints, or pods that other pods'
terms select; taint_score the last, which scores only where a candidate has a PreferNoSchedule taint.)

A file that is not valid YAML or does not match this shape stops the scheduler at start-up with a
message that says what to fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from podtax.campaign_yaml import value_problem
from podtax.config_common import ConfigError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BenchmarkArgs(_Strict):
    weight: float = Field(5.0, ge=0, le=100)
    shrink_runs: float = Field(3.0, ge=0, le=10_000, description="k in n/(n+k): runs that count half.")
    missing_score: float = Field(20.0, ge=0, le=100, description="Score of nodes without usable evidence.")
    statistic: Literal["mean", "median"] = Field("median", description="Per-run statistic ranked by; the "
                                                 "median resists an outlying run.")
    sensitivity: float = Field(5.0, ge=0, le=1000, description="Score points lost per 1% below the best "
                                                               "node's lower bound, divided by 100 (5: 10% slower "
                                                               "scores 50).")
    unmeasured: Literal["last", "compete"] = Field(
        "last", description="last: a node without usable evidence never ranks above one with evidence; "
                            "compete: it competes with missing_score.")
    no_interval_noise: float = Field(0.05, description="Relative noise of one run assumed for a score without "
                                     "interval (n < 6 runs): its lower bound is its speed x (1 - this / sqrt(n)); "
                                     "0 to 0.5 (more makes every node without interval score 100: no ranking).")
    ignore_flags: list[Literal["CONFOUNDED", "BIMODAL", "OVERLAP", "THROTTLED", "EMULATED"]] = Field(
        default_factory=lambda: ["CONFOUNDED", "BIMODAL", "OVERLAP", "THROTTLED", "EMULATED"],
        description="Analyzer flags whose evidence does not drive placement.")

    @field_validator("no_interval_noise")
    @classmethod
    def _noise_range(cls, value: float) -> float:
        if not 0 <= value <= 0.5:  # NaN too
            raise ValueError(f"got {value}: give a number from 0 up to 0.5 (one run's relative noise; 0.05 is 5%)")
        return value


class LeastAllocatedArgs(_Strict):
    weight: float = Field(1.0, ge=0, le=100)


class InterPodAffinityArgs(_Strict):
    """kube-scheduler's default weight (2) and InterPodAffinityArgs.hardPodAffinityWeight (1, 0..100)."""

    weight: float = Field(2.0, ge=0, le=100)
    hard_pod_affinity_weight: int = Field(1, ge=0, le=100, description="What an existing pod's required affinity "
                                                                       "term matching the incoming pod adds.")


class PodTopologySpreadArgs(_Strict):
    weight: float = Field(2.0, ge=0, le=100)  # kube-scheduler's default weight


class TaintTolerationArgs(_Strict):
    weight: float = Field(3.0, ge=0, le=100)  # kube-scheduler's default weight


class ScoreSection(_Strict):
    BenchmarkScore: BenchmarkArgs = BenchmarkArgs()
    LeastAllocated: LeastAllocatedArgs = LeastAllocatedArgs()
    InterPodAffinity: InterPodAffinityArgs = InterPodAffinityArgs()
    PodTopologySpread: PodTopologySpreadArgs = PodTopologySpreadArgs()
    TaintToleration: TaintTolerationArgs = TaintTolerationArgs()


class Profile(_Strict):
    score: ScoreSection = ScoreSection()

    def weights(self) -> dict[str, float]:
        return {"BenchmarkScore": self.score.BenchmarkScore.weight,
                "LeastAllocated": self.score.LeastAllocated.weight,
                "InterPodAffinity": self.score.InterPodAffinity.weight,
                "PodTopologySpread": self.score.PodTopologySpread.weight,
                "TaintToleration": self.score.TaintToleration.weight}


def known_settings() -> str:
    """Each score plugin with its settings, from the models: 'BenchmarkScore (weight, shrink_runs, ...), ...'."""
    models = {name: field.annotation for name, field in ScoreSection.model_fields.items()}
    return ", ".join(f"{name} ({', '.join(model.model_fields)})" for name, model in models.items()
                     if isinstance(model, type) and issubclass(model, BaseModel))


def load_profile(path: Path | None) -> Profile:
    if path is None:
        return Profile()
    where = f"PODTAX_SCHEDULER_PROFILE={path}"
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read the profile ({exc.strerror}); fix the path or unset it "
                          f"to use the default weights") from None
    except UnicodeDecodeError as exc:  # a binary file: it was a UnicodeDecodeError traceback (audit hD)
        raise ConfigError(f"{where}: not UTF-8 text (byte {exc.start}): the profile is a YAML file; fix the path "
                          f"or unset it to use the default weights") from None
    try:
        raw = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not valid YAML ({exc}); fix the file, e.g.\n"
                          f"score:\n  BenchmarkScore: {{weight: 5}}\n  LeastAllocated: {{weight: 1}}") from None
    except ValueError as exc:  # YAML's int() past 4,300 digits or a date like 2024-13-01: a traceback at start
        raise ConfigError(f"{where}{value_problem(exc, text)}") from None
    try:
        profile = Profile.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'profile'}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{where}: invalid profile: {problems}. Known score plugins: {known_settings()}") from None
    weights = profile.weights()
    if weights["BenchmarkScore"] + weights["LeastAllocated"] <= 0:
        others = "every score weight is 0" if sum(weights.values()) <= 0 else (
            "BenchmarkScore and LeastAllocated both weigh 0, and the others score only pods with affinity or spread "
            "preferences or nodes with PreferNoSchedule taints, so every other pod would be placed at random")
        raise ConfigError(f"{where}: {others}; give BenchmarkScore or LeastAllocated a positive weight")
    return profile
