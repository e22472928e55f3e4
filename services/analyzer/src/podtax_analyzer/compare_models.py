"""What `podtax compare` answers (podtax_analyzer.campaign_compare computes it): a row per cell in both campaigns,
and the comparison."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

ChangeVerdict = Literal["improved", "worsened", "no detectable difference", "inconclusive", "not comparable",
                        "set by the parameters"]
BoundWay = Literal["at least", "at most", "either way"]


class CellChange(BaseModel):
    id: str = Field(description="Stable id of the pair (base cell id + new cell id).")
    node: str
    test: str
    params: str
    metric: str
    unit: str
    higher_is_better: bool
    primary: bool
    sides: tuple[str, str] = Field(description="(baseline, candidate) environments of the ratio.")
    base_cell: str = Field(description="Cell id in BASE.")
    new_cell: str = Field(description="Cell id in NEW.")
    n_base: int = Field(ge=0, description="Runs of the cell in BASE (both sides).")
    n_new: int = Field(ge=0)
    compared: str = Field(description="What is compared, in words: 'pod/host ratio', 'kubernetes median (ms)'.")
    base_ratio: float | None = Field(description="candidate/baseline ratio in BASE (null when withheld or when "
                                                 "the cell has one environment).")
    new_ratio: float | None
    base_value: float | None = Field(description="The compared figure in BASE: the ratio, or the median of a "
                                                 "one-environment cell (metric unit).")
    new_value: float | None
    base_bound: BoundWay | None = Field(None, description="base_value is only a bound: a median resting on objects "
                                        "given up while waiting (LOWER_BOUND) is a lower one, on figures timed "
                                        "after a dropped watch (WATCH_GAP) or holding a retry's wait (RETRIED) an "
                                        "upper one, and a ratio's bound is its candidate's, its baseline's reversed: "
                                        "the true figure is 'at least' it, "
                                        "'at most' it or 'either way'; null: exact.")
    new_bound: BoundWay | None = Field(None, description="new_value's bound, as base_bound.")
    diff: float | None = Field(description="new_value - base_value.")
    diff_ci_low: float | None
    diff_ci_high: float | None
    change: float | None = Field(description="new_value / base_value.")
    change_ci_low: float | None
    change_ci_high: float | None
    p_value: float | None = Field(description="Two-sided bootstrap p-value of 'no change'.")
    p_adjusted: float | None = Field(description="p_value corrected within its family (primary or secondary); null "
                                                 "when p_value is, and for a descriptive figure (kube-burner's "
                                                 "min/avg of a phase, "
                                                 "podtax.phases.is_descriptive: in no family, verdict 'inconclusive').")
    verdict: ChangeVerdict = Field(description="The change's verdict; 'inconclusive' for a descriptive figure "
                                               "(descriptive true), unless not comparable.")
    descriptive: bool = Field(False, description="kube-burner's min/avg of a control-plane phase "
                                                  "(P_min_ms, P_avg_ms: podtax.phases.is_descriptive): in no "
                                                  "correction family, no verdict of its own (verdict "
                                                  "'inconclusive', the sentence begins 'Descriptive, not "
                                                  "tested').")
    flags: list[str] = Field(default_factory=list, description="'BASE:FLAG' and 'NEW:FLAG' (NEW:CONFOUNDED: "
                                                               "a median given in another unit than in BASE, "
                                                               "or runs that disagree on whether higher is better; "
                                                               "NEW:TOOL_CHANGED: another tool build than in BASE).")
    flag_details: dict[str, str] = Field(default_factory=dict)
    sentence: str


class CampaignChange(BaseModel):
    base: str
    new: str
    threshold: float
    correction: Literal["holm", "bh"]
    cells: list[CellChange]
    only_in_base: list[str] = Field(default_factory=list, description="'node test params metric' of unmatched cells.")
    only_in_new: list[str] = Field(default_factory=list)
    only_in_base_labels: list[str] = Field(default_factory=list, description="only_in_base as a person reads "
                                           "them, for printing: the params as params_labels show them.")
    only_in_new_labels: list[str] = Field(default_factory=list)
    params_labels: dict[str, dict[str, str]] = Field(
        default_factory=dict, description="test -> params key -> the params as every label of this comparison "
                                           "shows them: without a param empty in every cell of the test in both "
                                           "campaigns (podtax.param_labels); every `params` field keeps the whole "
                                           "key.")
