"""What a campaign allows but will disappoint, said when it is submitted (`podtax campaign submit` prints each):
too few runs a side for any verdict, a run whose length leaves its timeout no room for start-up."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from podtax import templates
from podtax.campaign_limits import MAX_TIMEOUT_S
from podtax.flags import MIN_RUNS
from podtax.template_params import RUN_LENGTH, length_problem, run_length

if TYPE_CHECKING:
    from podtax.campaign import Campaign, TestSpec


def run_lengths(spec: TestSpec) -> list[tuple[str, int, dict[str, Any]]]:
    """(parameter, seconds, combination) of each combination of `spec` whose run lasts a known time; none, and no
    combination validated again, for a template without a length parameter."""
    if spec.test not in RUN_LENGTH:
        return []
    found = []
    for combo in spec.combinations():
        length = run_length(spec.test, templates.get(spec.test).validate(combo).model_dump())
        if length:
            found.append((*length, combo))
    return found


def warnings(c: Campaign) -> list[str]:
    """What is allowed but will disappoint: too few runs a side for the report to give any verdict; a run that
    leaves its timeout no room for start-up (a pod's image pull, fio's file lay-out), killed on a slow start."""
    said = []
    for i, spec in enumerate(c.tests):
        lengths = sorted(run_lengths(spec), key=lambda found: -found[1])
        if lengths and (problem := length_problem(spec.test, lengths[0][0], lengths[0][1], c.timeout,
                                                  MAX_TIMEOUT_S)):
            said.append(f"tests.{i}: {problem}")
    reps = c.repetitions
    most = reps.max if reps.target_ci_width is not None else reps.min  # without a target, min runs a cell
    if most < MIN_RUNS:
        said.append(f"repetitions: at most {most} run(s) a side per cell; a verdict needs {MIN_RUNS} a side, so the "
                    f"report will flag every cell INSUFFICIENT (set repetitions.min to {MIN_RUNS} or more)")
    return said
