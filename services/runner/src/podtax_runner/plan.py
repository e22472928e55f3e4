"""The planner: a campaign -> per-node queues of runs. Pure functions, seeded randomness.

- tests x parameter combinations x nodes -> cells; `threads: all` resolved to the node's
  hardware thread count, the same number for host and pod;
- each repetition of a cell is a block with one run per environment, in a random order
  (host-pod or pod-host), and the blocks of all cells of a node are shuffled together, so
  drift over time hits both sides alike and the two sides stay interleaved;
- runs on one node form ONE queue across environments: they never overlap.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Any

from podtax import events, templates
from podtax.campaign import Campaign


@dataclass(frozen=True)
class Cell:
    node: str
    test: str
    params: dict[str, Any]

    @property
    def key(self) -> str:
        return f"{self.node}|{self.test}|{templates.params_key(self.params)}"


def run_id(campaign: str, cell: Cell, env: str, rep: int, attempt: int = 1) -> str:
    digest = hashlib.sha1(f"{campaign}|{cell.key}|{env}|{rep}".encode()).hexdigest()[:16]
    return f"{campaign}-{digest}" + (f"-a{attempt}" if attempt > 1 else "")


def cells(campaign: Campaign, node: str, hw_threads: int) -> list[Cell]:
    out = []
    for spec in campaign.tests:
        for combo in spec.combinations():
            params = templates.resolve_threads(combo, hw_threads)
            out.append(Cell(node, spec.test, dict(templates.get(spec.test).validate(params).model_dump())))
    return out


def block(campaign: Campaign, cell: Cell, rep: int, rng: random.Random, cluster: str) -> list[events.RunSpec]:
    """One repetition of a cell: a run per environment, in a random order."""
    envs = list(campaign.environments)
    rng.shuffle(envs)
    return [events.RunSpec(run_id=run_id(campaign.name, cell, env, rep), campaign=campaign.name, cluster=cluster,
                           node=cell.node, env=env, test=cell.test, params=cell.params, timeout_s=campaign.timeout)
            for env in envs]


def expand(campaign: Campaign, nodes: dict[str, int], cluster: str = "local",
           seed: int | None = None) -> dict[str, list[events.RunSpec]]:
    """Plan `repetitions.min` blocks per cell; `nodes` maps node name -> hardware threads."""
    rng = random.Random(campaign.seed if campaign.seed is not None else seed)
    plan: dict[str, list[events.RunSpec]] = {}
    for node in sorted(nodes):
        blocks = [block(campaign, cell, rep, rng, cluster)
                  for cell in cells(campaign, node, nodes[node]) for rep in range(campaign.repetitions.min)]
        rng.shuffle(blocks)
        queue = [run for b in blocks for run in b]
        plan[node] = [r.model_copy(update={"sequence": i}) for i, r in enumerate(queue)]
    return plan


def retry(run: events.RunSpec) -> events.RunSpec:
    """The second (and last) attempt of a run that never reported back."""
    base = run.run_id.removesuffix(f"-a{run.attempt}")
    return run.model_copy(update={"attempt": run.attempt + 1, "run_id": f"{base}-a{run.attempt + 1}"})
