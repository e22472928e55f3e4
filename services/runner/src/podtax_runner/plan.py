"""The planner: a campaign -> per-node queues of runs. Pure functions, seeded randomness.

- tests x parameter combinations x nodes -> cells; `threads: all` resolved to the node's
  hardware thread count, the same number for host and pod; combinations that become the same
  cell on a node (`threads: [2, all]` with 2 hardware threads) are planned once, with a warning;
- each repetition of a cell is a block with one run per environment, in a random order
  (host-pod or pod-host), and the blocks of all cells of a node are shuffled together, so
  drift over time hits both sides alike and the two sides stay interleaved;
- runs on one node form ONE queue across environments: they never overlap.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from podtax import events, templates
from podtax.campaign import Campaign


@dataclass(frozen=True)
class Cell:
    node: str
    test: str
    params: dict[str, Any]

    @cached_property
    def key(self) -> str:
        return f"{self.node}|{self.test}|{templates.params_key(self.params)}"


def run_id(campaign: str, cell: Cell, env: str, rep: int, attempt: int = 1) -> str:
    digest = hashlib.sha1(f"{campaign}|{cell.key}|{env}|{rep}".encode()).hexdigest()[:16]
    return f"{campaign}-{digest}" + (f"-a{attempt}" if attempt > 1 else "")


def cells(campaign: Campaign, node: str, hw_threads: int) -> list[Cell]:
    """The node's cells, each once (the same cell twice would give its runs the same ids)."""
    return _cells(campaign, node, hw_threads)[0]


def merged(campaign: Campaign, nodes: dict[str, int]) -> list[str]:
    """A warning for each parameter combination planned as another's cell on a node, once `all` is resolved."""
    return [w for node in sorted(nodes) for w in _cells(campaign, node, nodes[node])[1]]


def _cells(campaign: Campaign, node: str, hw_threads: int) -> tuple[list[Cell], list[str]]:
    out: dict[str, Cell] = {}
    first: dict[str, dict[str, Any]] = {}
    warnings = []
    for spec in campaign.tests:
        for combo in spec.combinations():
            params = templates.resolve_threads(combo, hw_threads)
            cell = Cell(node, spec.test, dict(templates.get(spec.test).validate(params).model_dump()))
            if cell.key in out:
                warnings.append(f"{node}: {spec.test} {templates.params_key(combo)} is the same cell as "
                                f"{templates.params_key(first[cell.key])} there ({hw_threads} hardware threads): "
                                f"planned once")
                continue
            out[cell.key], first[cell.key] = cell, combo
    return list(out.values()), warnings


def block(campaign: Campaign, cell: Cell, rep: int, rng: random.Random, cluster: str,
          sequence: int = 0) -> list[events.RunSpec]:
    """One repetition of a cell: a run per environment, in a random order, numbered from `sequence`."""
    return _runs(campaign, cell, rep, _order(campaign, rng), cluster, sequence)


def _order(campaign: Campaign, rng: random.Random) -> list[str]:
    """The environments of one block, in a random order."""
    envs = list(campaign.environments)
    rng.shuffle(envs)
    return envs


def _runs(campaign: Campaign, cell: Cell, rep: int, envs: list[str], cluster: str,
          sequence: int) -> list[events.RunSpec]:
    return [events.RunSpec(run_id=run_id(campaign.name, cell, env, rep), campaign=campaign.name, cluster=cluster,
                           node=cell.node, env=env, test=cell.test, params=cell.params, timeout_s=campaign.timeout,
                           sequence=sequence + i)
            for i, env in enumerate(envs)]


def expand(campaign: Campaign, nodes: dict[str, int], cluster: str = "local",
           seed: int | None = None) -> dict[str, list[events.RunSpec]]:
    """Plan `repetitions.min` blocks per cell; `nodes` maps node name -> hardware threads. The order of
    each block is drawn first, then the blocks are shuffled, then the runs are built already numbered."""
    rng = random.Random(campaign.seed if campaign.seed is not None else seed)
    plan: dict[str, list[events.RunSpec]] = {}
    for node in sorted(nodes):
        orders = [(cell, rep, _order(campaign, rng))
                  for cell in cells(campaign, node, nodes[node]) for rep in range(campaign.repetitions.min)]
        rng.shuffle(orders)
        queue: list[events.RunSpec] = []
        for cell, rep, envs in orders:
            queue += _runs(campaign, cell, rep, envs, cluster, len(queue))
        plan[node] = queue
    return plan


def retry(run: events.RunSpec) -> events.RunSpec:
    """The second (and last) attempt of a run that never reported back."""
    base = run.run_id.removesuffix(f"-a{run.attempt}")
    return run.model_copy(update={"attempt": run.attempt + 1, "run_id": f"{base}-a{run.attempt + 1}"})
