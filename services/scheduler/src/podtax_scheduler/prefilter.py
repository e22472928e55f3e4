"""PreFilter of PodTopologySpread and InterPodAffinity: what they compute once per pod, over every node and
counted pod, before their Filter checks each node (kube-scheduler's PreFilter / Filter split).

A scheduling cycle computes it once (:func:`run`, ``ClusterState.prefilter``) and hands it to
``ClusterState.feasible`` and ``ClusterState.explain`` (the failure's reasons, the passed-over nodes' reasons), as
``algorithm.decide`` does; each computes it itself when given none.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from podtax_scheduler import podspread
from podtax_scheduler.filters import NodeAffinity, TaintToleration
from podtax_scheduler.model import PodInfo
from podtax_scheduler.podaffinity import AffinityCycle, prefilter

if TYPE_CHECKING:
    from podtax_scheduler.state import ClusterState

KEY = "prefilter"  # where decide() leaves it in the score plugins' cycle


@dataclass(frozen=True, slots=True)
class PreFilter:
    """The pod's PreFilter results: None where the plugin has nothing to check for it."""

    spread: podspread.SpreadCycle | None
    affinity: AffinityCycle | None


def affinity_cycle(state: ClusterState, pod: PodInfo) -> AffinityCycle | None:
    """InterPodAffinity's PreFilter over the counted pods, or None when it has nothing to check (caller holds the
    lock)."""
    if not pod.affinity_terms and not pod.anti_affinity_terms and not state.with_anti:
        return None
    pod = state.namespaces.resolved(pod)

    def on_nodes(uids: Iterable[str]) -> Iterable[tuple[PodInfo, dict[str, str]]]:
        for uid in uids:
            node = state.nodes.get(state.pod_node.get(uid, ""))
            other = state.placed.get(uid)
            if node is not None and other is not None and uid != pod.uid:
                yield other, node.labels

    # a pod counted for affinity matches the first term; one counted for anti-affinity matches a term
    selectors = [t.selector for t in (pod.affinity_terms[:1] + pod.anti_affinity_terms)]
    return prefilter(pod, on_nodes(state._carrying(selectors)),
                     ((terms, (labels for _, labels in on_nodes(uids))) for terms, uids in state.with_anti.items()),
                     state.namespaces.of(pod.namespace))


def spread_cycle(state: ClusterState, pod: PodInfo) -> podspread.SpreadCycle | None:
    """PodTopologySpread's PreFilter over every node, or None when the pod has no DoNotSchedule constraint (caller
    holds the lock)."""
    if not pod.spread_constraints:
        return None
    n = state.size
    has_keys = state.alive[:n].copy()
    for c in pod.spread_constraints:
        has_keys &= state._codes(c.topology_key)[1][:n] >= 0
    eligible = []
    for c in pod.spread_constraints:
        mask = has_keys
        if c.honor_affinity:
            mask = mask & state._plugin_mask(pod, NodeAffinity())[:n]
        if c.honor_taints:
            mask = mask & state._plugin_mask(pod, TaintToleration())[:n]
        eligible.append(mask)
    placed = [(other, state.slot[name]) for uid in state._carrying(c.selector for c in pod.spread_constraints)
              if (other := state.placed.get(uid)) is not None and (name := state.pod_node.get(uid)) in state.slot]
    return podspread.prefilter(pod, eligible, state._codes, placed)


def run(state: ClusterState, pod: PodInfo) -> PreFilter:
    """Both PreFilters for the pod (caller holds the lock)."""
    return PreFilter(spread_cycle(state, pod), affinity_cycle(state, pod))
