"""Pydantic models of the comparison report (also the HTTP API's response schema)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from podtax import templates
from podtax.sides import verdict_word
from pydantic import BaseModel, Field, model_validator

Verdict = Literal["faster", "slower", "no detectable difference", "inconclusive", "not comparable",
                  "set by the parameters"]
FlagName = Literal["CONFOUNDED", "INSUFFICIENT", "IMBALANCED", "BIMODAL", "OUTLIERS", "DRIFT",
                   "SEQUENTIAL", "THROTTLED", "SHORT", "ROUNDED_RUNTIME", "FEW_OBSERVATIONS", "ERRORS", "LOWER_BOUND",
                   "WATCH_GAP", "RETRIED", "DELETE_REFUSED", "LEFT_BEHIND", "SLOW_OBJECTS", "OVERLAP",
                   "VERSION_MISMATCH", "PARAMS_MISMATCH", "IMPORTED"]


is_primary_metric = templates.is_primary_metric  # one definition, shared by the API and the CLI


class ModeOut(BaseModel):
    label: Literal["low", "high"] = Field(description="Below or above the mode boundary.")
    n: int = Field(ge=0, description="Runs in this mode on this side.")
    share: float = Field(ge=0, le=1, description="n / runs on the side.")
    median: float | None = Field(description="Median of the mode's runs (metric unit); null if empty.")


class SideModes(BaseModel):
    bimodal: bool = Field(description="This side alone passed both bimodality checks.")
    dip_p: float | None = Field(description="Hartigan's dip test p-value (null below 10 runs).")
    bimodality_coefficient: float | None = Field(description="Sarle's coefficient; > 0.555 suggests two modes.")
    boundary: float | None = Field(None, description="Value (metric unit) this side's modes are split at: its own "
                                                     "when it is bimodal, else the bimodal side's.")
    modes: list[ModeOut]


class CellModes(BaseModel):
    boundary: float = Field(description="Value (metric unit) separating the low and the high mode on the "
                                        "baseline side (each side's own: host.boundary, pod.boundary).")
    host: SideModes
    pod: SideModes


class OutlierOut(BaseModel):
    run_id: str
    env: str
    value: float = Field(description="Metric value of the run (kept in every statistic).")
    z: float = Field(description="Modified z-score within its side, or its mode on a side with two (5 to 9 positive "
                                 "runs: on log values, against the spread of the runs left without it and any "
                                 "farther; |z| > 3.5 "
                                 "below 10 runs, > 6 from 10; > 3.5 for a second group).")
    group: bool = Field(default=False, description="One of the runs of the cell's second group (together on one side "
                                                   "of their side's median): the cell is never called equivalent.")


class CellComparison(BaseModel):
    id: str = Field(description="Stable short hash of (campaign, cluster, node, test, params, metric).")
    campaign: str
    cluster: str = Field(default="local", description="Cluster of the node: the same node name in two "
                                                      "clusters is two cells.")
    node: str
    test: str
    params: str = Field(description="Canonical parameters 'k=v k=v'.")
    metric: str
    unit: str
    higher_is_better: bool
    primary: bool = Field(default=False, description="The metric is the test's primary (headline) metric for "
                                                      "these parameters; `podtax report` shows only these by "
                                                      "default.")
    baseline: str = Field(default="host", description="Environment of the baseline side (the ratio's "
                                                       "denominator): host for the pod tax, kubernetes against "
                                                       "nomad (podtax.sides.pair). The host_* fields are its.")
    candidate: str = Field(default="kubernetes", description="Environment of the candidate side (the numerator); "
                                                             "the pod_* fields are its. Empty for a one-sided "
                                                             "test (pod-startup).")
    n_host: int = Field(ge=0, description="Runs of the baseline side (host for the pod tax).")
    n_pod: int = Field(ge=0, description="Runs of the candidate side (pod for the pod tax).")
    host_median: float | None = Field(description="Median of the baseline side; when that side is BIMODAL, between "
                                                  "its two modes if they hold as many runs, else inside the larger "
                                                  "(see host_modes).")
    pod_median: float | None = Field(description="Median of the candidate side; when BIMODAL, between its modes or "
                                                 "inside the larger (see pod_modes).")
    host_modes: str | None = Field(None, description="When the baseline side is BIMODAL: its two modes as shown in "
                                                     "place of its median, low first, each mode's median and runs: "
                                                     "'128.3 (n=6) | 182.6 (n=6)' (modes.host has the figures); "
                                                     "null for a side with one mode.")
    pod_modes: str | None = Field(None, description="The candidate side's two modes when it is BIMODAL, as host_modes; "
                                                    "null otherwise.")
    host_tool_version: str | None = Field(description="Tool, version and build of the baseline runs.")
    pod_tool_version: str | None = Field(description="Tool, version and build of the candidate runs.")
    ratio: float | None = Field(description="median(candidate) / median(baseline): pod/host, nomad/kubernetes; "
                                            "null when withheld (podtax.flags.WITHHOLD_RATIO) or not computable.")
    ci_low: float | None = Field(description="Lower bound of the 95% interval of the ratio; null when withheld "
                                             "(podtax.flags.WITHHOLD_INFERENCE: also INSUFFICIENT, fewer than "
                                             "podtax.flags.MIN_RUNS runs on a side) or not computable.")
    ci_high: float | None = Field(description="Upper bound of the 95% interval of the ratio; null with ci_low.")
    ci_method: Literal["bca", "hodges-lehmann"] | None = Field(
        description="bca = BCa bootstrap; hodges-lehmann where the bootstrap was unstable.")
    hl_ratio: float | None = Field(description="Cross-check (the effect): exp(Hodges-Lehmann shift of log "
                                               "values); null when withheld (podtax.flags.WITHHOLD_INFERENCE).")
    hl_ci_low: float | None
    hl_ci_high: float | None
    p_value: float | None = Field(description="Two-sided Mann-Whitney U p-value, candidate vs baseline; null when "
                                              "withheld (podtax.flags.WITHHOLD_INFERENCE: also INSUFFICIENT) or "
                                              "the metric has no variance: such a cell is not in the correction "
                                              "family.")
    p_adjusted: float | None = Field(description="p_value after the campaign-wide correction (Holm or BH within "
                                                 "its family); null when p_value is, and for a descriptive figure "
                                                 "(kube-burner's min/avg of a phase, podtax.phases.is_descriptive: "
                                                 "in no family, verdict 'inconclusive').")
    verdict: Verdict = Field(description="'set by the parameters' for a metric set in every run rather than "
                                         "measured (sysbench's events under events=N, total_time under time=T, "
                                         "hdparm's read seconds: podtax.templates.set_by_params): no ratio, "
                                         "interval or p-value. 'faster'/'slower' mean better/worse in the "
                                         "metric's direction (higher_is_better), also for a count (fewer errors "
                                         "is 'faster'): the word to say is `direction`. 'inconclusive' for a "
                                         "descriptive figure (descriptive true), unless not comparable.")
    descriptive: bool = Field(False, description="kube-burner's min/avg of a control-plane phase "
                                                  "(P_min_ms, P_avg_ms: podtax.phases.is_descriptive): in no "
                                                  "correction family, no verdict of its own (verdict "
                                                  "'inconclusive', the sentence begins 'Descriptive, not "
                                                  "tested').")
    direction: Literal["faster", "slower", "more", "fewer", "higher", "lower"] | None = Field(
        None, description="The word of a faster/slower verdict as the sentence says it: 'faster' or 'slower', "
                          "for a count (unit 'count' or 'requests': objects_ok, errors, requests_per_object, "
                          "retransmits) 'more' or 'fewer', for a level (unit '%': lost_percent, "
                          "cpu_local_percent) 'higher' or 'lower' (the candidate's median above or below the "
                          "baseline's); null for any other verdict.")
    change_pct: float | None = Field(description="(ratio - 1) * 100: the candidate's median relative to the "
                                                 "baseline's, in the metric's own direction (positive = higher "
                                                 "value).")
    sentence: str = Field(description="The cell in one sentence.")
    flags: list[FlagName] = Field(default_factory=list)
    flag_details: dict[str, str] = Field(default_factory=dict, description="Flag name -> explanation.")
    modes: CellModes | None = None
    host_lower_bound: bool = Field(False, description="host_median is a lower bound (flag LOWER_BOUND): some of the "
                                                      "side's control-plane runs counted objects given up while "
                                                      "waiting at the time they were given up; shown as \"≥ value\".")
    pod_lower_bound: bool = Field(False, description="pod_median is a lower bound, as host_lower_bound.")
    host_upper_bound: bool = Field(False, description="host_median is an upper bound (flag WATCH_GAP or RETRIED): "
                                                      "it rests on runs of the side that timed it after a dropped "
                                                      "Kubernetes watch or with a retry's wait in it (the true time "
                                                      "was shorter); shown as \"≤ value\" "
                                                      "(\"≶ value\" when it is also a lower bound).")
    pod_upper_bound: bool = Field(False, description="pod_median is an upper bound, as host_upper_bound.")
    outliers: list[OutlierOut] = Field(default_factory=list)
    crossed_lone_runs: bool = Field(False, description="Each side's one outlier lies toward the other side's main "
                                                        "runs and the sides were compared at each level "
                                                        "(stats.verdict.groups_cross): one node name over two "
                                                        "machines run 9/1 and 1/9, or one stray run a side. The ratio "
                                                        "of medians compares one level with the other, so the "
                                                        "summary leaves the cell out.")
    warnings: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _primary(self) -> CellComparison:
        if "primary" not in self.model_fields_set:
            self.primary = is_primary_metric(self.test, self.params, self.metric)
        if "direction" not in self.model_fields_set:
            self.direction = verdict_word(self.verdict, self.higher_is_better, self.unit)  # type: ignore[assignment]
        return self


class SummaryItem(BaseModel):
    sentence: str
    cells: list[str] = Field(description="Ids of the cells the sentence is built from.")
    test: str
    params: str
    metric: str
    geomean_ratio: float | None = Field(description="Geometric mean of the clean cells' ratios.")
    geomean_ci_low: float | None = Field(None, description="Geometric mean of the clean cells' interval lows "
                                         "(0 when one is 0 or less): if every node's true ratio lies in its "
                                         "interval, their geometric mean lies in [geomean_ci_low, geomean_ci_high].")
    geomean_ci_high: float | None = Field(None, description="Geometric mean of the clean cells' interval highs.")
    geomean_change: Literal["faster", "slower", "within"] | None = Field(
        None, description="faster/slower: that interval lies beyond the no-difference band (1 - t to 1 + t) and a "
                          "clean node's own verdict says the same, so the sentence states the change; within: it "
                          "lies inside the band and no clean node's verdict is faster or slower; null: no difference "
                          "across nodes can be claimed, the nodes disagree, or no figure.")
    nodes_included: list[str]
    nodes_excluded: dict[str, list[str]] = Field(description="Node -> reasons (flags) for exclusion.")
    nodes_disagree: bool = Field(False, description="Two included nodes' intervals do not overlap: the geometric "
                                                    "mean describes none of them.")


class CampaignReport(BaseModel):
    campaign: str
    threshold: float = Field(description="Practical threshold as a fraction (0.01 = 1%).")
    correction: Literal["holm", "bh"]
    confidence: float = 0.95
    cells: list[CellComparison]
    summary: list[SummaryItem]
    warnings: list[str] = Field(default_factory=list)
    params_labels: dict[str, dict[str, str]] = Field(
        default_factory=dict, description="test -> params key -> the params as every label of this report shows "
                                           "them (headings, sentences, warnings, phase table): without a param "
                                           "empty in every cell and failed run of the test (podtax.param_labels); "
                                           "every `params` field keeps the whole key.")


class CellRun(BaseModel):
    run_id: str
    env: str
    order: int = Field(description="Position of the run in the cell, both sides, by start time (0-based).")
    side_order: int = Field(description="Position of the run within its side (0-based).")
    started_at: datetime | None
    value: float
    tool_version: str | None
    flags: list[str]
    nr_throttled: int | None
    cpu_limit: float | None


class CellValues(BaseModel):
    id: str
    campaign: str
    node: str
    test: str
    params: str
    metric: str
    unit: str
    higher_is_better: bool
    runs: list[CellRun]
