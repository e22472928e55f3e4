"""The flags a cell can carry: their names, which ones block a verdict, and one sentence each.

A contract between the analyzer (which sets the flags), the scheduler (which ignores flagged
evidence), and the CLI and report (which explain them): defined once here, in the library every
service depends on. Blocking flags make the verdict "inconclusive". WITHHOLD_RATIO also withholds the
headline ratio, its interval, effect and p-value, because the figures do not measure the cell's
comparison (CONFOUNDED, OVERLAP, PARAMS_MISMATCH) or one centre would misdescribe them (BIMODAL);
INSUFFICIENT, DRIFT and SEQUENTIAL keep the ratio, an estimate of this very cell, but not the verdict.
WITHHOLD_INFERENCE (WITHHOLD_RATIO and INSUFFICIENT) withholds the interval, the Hodges-Lehmann effect and
the p-value: below MIN_RUNS a side they would look precise and mean nothing, and a p-value would join the
multiple-testing family and move the other cells' adjusted p-values (`podtax compare` applies the same
minimum).
"""

from __future__ import annotations

from collections.abc import Iterable

MIN_RUNS = 6
MAX_IMBALANCE = 3.0
ORDER = ("CONFOUNDED", "INSUFFICIENT", "IMBALANCED", "BIMODAL", "OVERLAP", "PARAMS_MISMATCH", "DRIFT", "SEQUENTIAL",
         "THROTTLED", "SHORT", "ROUNDED_RUNTIME", "FEW_OBSERVATIONS", "ERRORS", "LOWER_BOUND", "WATCH_GAP", "RETRIED",
         "DELETE_REFUSED", "LEFT_BEHIND", "SLOW_OBJECTS", "VERSION_MISMATCH", "IMPORTED", "OUTLIERS")
BLOCKING = frozenset({"CONFOUNDED", "INSUFFICIENT", "BIMODAL", "DRIFT", "SEQUENTIAL", "OVERLAP", "PARAMS_MISMATCH"})
WITHHOLD_RATIO = frozenset({"CONFOUNDED", "BIMODAL", "OVERLAP", "PARAMS_MISMATCH"})
WITHHOLD_INFERENCE = WITHHOLD_RATIO | {"INSUFFICIENT"}
BOUND_MARKS = {"at least": "≥ ", "at most": "≤ ", "either way": "≶ "}  # before a figure that is only a bound


def bound_mark(lower: bool, upper: bool = False) -> str:
    """What goes before a figure: "≥ " when it is only a lower bound (LOWER_BOUND: the true one is larger), "≤ "
    an upper bound (WATCH_GAP: the true one is smaller), "≶ " both; "" when it is exact."""
    if not (lower or upper):
        return ""
    return BOUND_MARKS["either way" if lower and upper else "at least" if lower else "at most"]

LEGEND = {
    "CONFOUNDED": "the two sides (host and pod) ran different tool builds or parameters, or gave the metric in "
                  "different units (also one side's runs alone), or the runs disagree on whether higher is better, or "
                  "a side's runs timed provisioned or bound from two different starts (PROVISION_START), or a "
                  "side's runs ran their tool executable through an emulator (EMULATED: qemu-user on a node of "
                  "another architecture; they measured the emulator, also one side alone); no ratio is given",
    "INSUFFICIENT": f"fewer than {MIN_RUNS} runs on a side: the ratio only, no interval or p-value",
    "IMBALANCED": f"run counts differ by more than {MAX_IMBALANCE:.0f} to 1",
    "BIMODAL": "values fall into two modes (or a side's 4 runs into two pairs far apart, which so few runs cannot "
               "tell from two strays: neither pair is called wrong); each mode is reported instead of one centre",
    "OUTLIERS": "some runs lie far from their side's median (modified z-score > 3.5 and more than 17.5% away below "
                "10 runs; from 10 runs > 6 and more than 6% away; on a side of 3 or 4 runs only a run more than "
                "twice or under half the median of the others and over 3 times their range from it, and among 4 two "
                "such runs judged against the other two; on a side with two modes, each mode's median and "
                "run count; runs of one side close together on one side of its median, a second group, from > 3.5 "
                "at any count); kept, not dropped",
    "DRIFT": "values changed over the course of the campaign",
    "SEQUENTIAL": "the two sides ran one after the other (or mostly), and the difference does not give the same "
                  "verdict once a steady change over both sides' runs (a trend fitted in time order) is taken out: "
                  "it may be the machine changing over the campaign; the ratio is kept",
    "THROTTLED": "the pod's CPU was throttled by its cgroup limit during runs",
    "SHORT": "the tool stopped before doing the requested work",
    "ROUNDED_RUNTIME": "fio runs that did their I/O in 20 ms or less: fio counts a runtime in whole ms rounded up and "
                       "divides the I/O by it, so their IOPS and bandwidth may be over 5% too low (latencies are "
                       "unaffected); run longer: a larger size, or time_based with a runtime (the fio template "
                       "runs time_based, at least 1 s)",
    "FEW_OBSERVATIONS": "runs that timed too few observations for a tail percentile (sockperf messages) left it out: "
                        "the side's median of it is of its other runs, those that timed the most",
    "ERRORS": "control-plane runs in which objects failed (never provisioned, bound or deleted): how many of how "
              "many, and what the first lacked; such a run has no makespan or wall time, and its per-object "
              "figures are of the objects that finished and of those given up while waiting (LOWER_BOUND)",
    "LOWER_BOUND": "control-plane runs in which objects were given up while waiting: they count in a phase's "
                   "percentiles at the time they were given up (they took longer), so a figure resting on them is "
                   "a lower bound, shown as \"≥ value\": the true value is larger",
    "WATCH_GAP": "control-plane runs that timed a figure after a dropped Kubernetes watch: end points seen only by "
                 "the re-list after the gap count at the time it saw them, so the figure is an upper bound (the true "
                 "time was shorter); a median resting on it makes no verdict that needs it (the mirror of "
                 "LOWER_BOUND)",
    "RETRIED": "control-plane runs in which calls refused (429 Too Many Requests, a 5xx) were sent again: those "
               "objects are timed from the attempt that succeeded (the throttled time is not in their latency; a "
               "makespan counts from the first attempt); a call not re-timed (a consumer pod's create) leaves the "
               "wait in its phase, an upper bound as WATCH_GAP's",
    "DELETE_REFUSED": "control-plane runs that failed because the API refused their deletes (RBAC's 403 on delete, "
                      "Nomad's, more than max(10, 10%) deletes refused) after every object was created and bound: "
                      "their create and bind figures count as any run's; their delete phases and whole-run figures "
                      "(objects_ok, errors, requests, wall time) are absent, not zero (those cells lack these runs); "
                      "the run is still reported failed, its leftovers named with `podtax volumes cleanup`",
    "LEFT_BEHIND": "control-plane runs that ended with objects not deleted: they still hold storage and names "
                   "(`podtax volumes cleanup --campaign <campaign>`)",
    "SLOW_OBJECTS": "control-plane runs in which a few objects took over 10 times their side's median of a phase "
                    "and a second more (a stuck provisioner's retries), in at least half of the side's runs and "
                    "standing apart from the rest or more of them than the side's own spread predicts (not a long "
                    "tail's end): how many of how many, in how many runs; a "
                    "figure resting on them (max, mean, makespan, a tail percentile) describes those few, not the "
                    "typical object, so read it with the phase's p50",
    "VERSION_MISMATCH": "runs whose log printed another tool version than the run recorded (the node's "
                        "`<tool> --version`, or an import manifest's tool_version); the log's version is used",
    "OVERLAP": "runs overlapped in time with other runs on the same node, so they measured each other",
    "PARAMS_MISMATCH": "runs whose log shows other parameters or work than their cell's (threads, prime limit, block "
                       "size, stress-ng cpu beside other stressors, iperf3 -O or --bidir, sockperf over its rate...): "
                       "their figures measure another cell",
    "IMPORTED": "runs imported from logs recorded outside podtax (`podtax import`), with how many on each side",
}


# A parser's run flag (not a cell's): the run timed too few observations for some percentiles, left out
# (parsers/sockperf.py). The import warns of it (cli/importcheck.py); the analyzer reads the metrics it names with
# FEW_NAMED (celldata_failures.py) and says so in the cell (FEW_OBSERVATIONS, or INSUFFICIENT if a side is short).
FEW_RUN_FLAG = "FEW_OBSERVATIONS: "
FEW_NAMED = rf"^{FEW_RUN_FLAG}.*?too few for ([\w, ]+?) \("  # group 1: the metrics, ", "-separated


def few_observations_flag(timed: str, metrics: Iterable[str], why: str, then: str) -> str:
    """The run flag: "FEW_OBSERVATIONS: <timed>, too few for <metric>, <metric> (<why>)<then>" (FEW_NAMED)."""
    return f"{FEW_RUN_FLAG}{timed}, too few for {', '.join(metrics)} ({why}){then}"
