"""Nomad's `volume in use`: what holds the volume and how to free it, in one wording for the run's object error and
LEFT_BEHIND flag (podtax.parsers.timeline) and `podtax volumes cleanup` (podtax_runner.controlplane.cleanup).

Nomad's deregister refuses a volume an allocation still claims (nomad/state: `volume in use`), after its plugin
deleted the storage (Nomad 1.1 to 2.0); it frees the claims of allocations that stopped (its volume watcher). A
cleanup sent again meets the same answer until that is done."""

from __future__ import annotations

IN_USE = "volume in use"
HOLDS = ("an allocation still claims it (`nomad volume status <id>` lists it): stop that job, and once Nomad has freed "
         "the claim clean up again")


def held(answer: str) -> str:
    """': <what holds it and how to free it>' to append to `answer` when it is Nomad's `volume in use`, else ''."""
    return f": {HOLDS}" if IN_USE in answer else ""
