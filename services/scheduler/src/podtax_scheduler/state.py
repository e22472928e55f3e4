"""The scheduler's view of the cluster: nodes, pods, the ledger of assumed pods, and numpy columns.

Every node has a slot; allocatable and requested amounts per resource are kept as int64 columns
updated incrementally as pods come and go, so checking one pod against 5,000 nodes is a handful of
vector operations instead of a Python loop. Static filter answers (labels, taints, readiness) are
cached per pod signature until a node's static fields change. One lock guards everything: the
informer threads write, the scheduling thread reads and assumes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from podtax_scheduler import podaffinity, podspread, prefilter
from podtax_scheduler.filters import DEFAULT_FILTERS, FilterPlugin, Status
from podtax_scheduler.model import NodeInfo, PodInfo
from podtax_scheduler.namespaces import NamespaceLabels
from podtax_scheduler.podaffinity import LabelSelector, feasible_mask, filter_node
from podtax_scheduler.prefilter import PreFilter
from podtax_scheduler.quantity import PODS


class ClusterState:
    def __init__(self, filters: Sequence[FilterPlugin] = DEFAULT_FILTERS, capacity: int = 256) -> None:
        self.lock = threading.RLock()
        self.filters = tuple(filters)
        self.static_filters = tuple(f for f in self.filters if f.static)
        self.nodes: dict[str, NodeInfo] = {}
        self.slot: dict[str, int] = {}
        self.names: list[str | None] = []
        self._free_slots: list[int] = []
        self._cap = capacity
        self.alive = np.zeros(capacity, dtype=bool)
        self.alloc: dict[str, np.ndarray] = {}
        self.req: dict[str, np.ndarray] = {}
        self.count = np.zeros(capacity, dtype=np.int64)
        self.pods: dict[str, PodInfo] = {}
        self.pod_node: dict[str, str] = {}  # uid -> node its requests are counted on
        self.by_node: dict[str, set[str]] = {}  # node -> uids counted there (also for unknown nodes)
        # the ledger: uid -> node of the pods decided whose binding the informer has not shown yet; an entry leaves when
        # it does (bound, terminal or deleted, also by a relist) or the bind failed (forget), never by age: a bind
        # waiting behind slow ones would free its node's room for another pod (kube-scheduler no longer expires its
        # assumed pods, kubernetes#106361)
        self.assumed: dict[str, str] = {}
        self.static_gen = 0  # bumps when any node's static fields change
        self.layout_gen = 0  # bumps when slots are added or removed
        self._static_cache: dict[str, tuple[int, np.ndarray]] = {}
        self.placed: dict[str, PodInfo] = {}  # uid -> the pod as counted on its node (InterPodAffinity reads them)
        # uids of counted pods with required pod anti-affinity, grouped by those terms (each group is matched once)
        self.with_anti: dict[tuple[podaffinity.AffinityTerm, ...], set[str]] = {}
        # uids of counted pods weighing in InterPodAffinity's score, grouped by their terms (PodInfo.scoring_terms)
        self.with_affinity: dict[podaffinity.ScoringTerms, set[str]] = {}
        self.by_label: dict[tuple[str, str], set[str]] = {}  # (label, value) -> uids of placed pods carrying it
        self.namespaces = NamespaceLabels(self.lock)  # what a namespaceSelector reads (the namespace informer's)
        self._domains: dict[str, tuple[int, dict[str, np.ndarray]]] = {}  # label key -> value -> slots
        self._codes_cache: dict[str, tuple[int, tuple[list[str], np.ndarray]]] = {}

    # ------------------------------------------------------------ columns

    @property
    def size(self) -> int:
        return len(self.names)

    def _grow(self) -> None:
        new = self._cap * 2

        def grown(a: np.ndarray) -> np.ndarray:
            out = np.zeros(new, dtype=a.dtype)
            out[: self._cap] = a
            return out

        self.alive = grown(self.alive)
        self.count = grown(self.count)
        self.alloc = {k: grown(v) for k, v in self.alloc.items()}
        self.req = {k: grown(v) for k, v in self.req.items()}
        self._cap = new

    def _column(self, res: str) -> None:
        if res not in self.alloc:
            self.alloc[res] = np.zeros(self._cap, dtype=np.int64)
            self.req[res] = np.zeros(self._cap, dtype=np.int64)

    def _write_node(self, i: int, node: NodeInfo) -> None:
        for res in set(node.allocatable) | set(node.requested):
            self._column(res)
        for res, col in self.alloc.items():
            col[i] = node.allocatable.get(res, 0)
            self.req[res][i] = node.requested.get(res, 0)
        self.count[i] = node.pod_count

    def _add_requests(self, node_name: str, uid: str, requests: dict[str, int], sign: int) -> None:
        node = self.nodes.get(node_name)
        if node is None:
            return
        i = self.slot[node_name]
        if sign > 0:
            node.add_pod(uid, requests)
        else:
            node.remove_pod(uid)
        self.count[i] = node.pod_count
        for res, q in requests.items():
            self._column(res)
            self.req[res][i] += sign * q

    # ------------------------------------------------------------ nodes

    def upsert_node(self, obj: dict[str, Any]) -> bool:
        """Add or update a node; True when the change may make a waiting pod schedulable."""
        info = NodeInfo.from_dict(obj)
        with self.lock:
            old = self.nodes.get(info.name)
            if old is not None and old.static_signature() == info.static_signature() \
                    and old.allocatable == info.allocatable:
                return False
            if old is None:
                if self._free_slots:
                    i = self._free_slots.pop()
                    self.names[i] = info.name
                else:
                    if len(self.names) >= self._cap:
                        self._grow()
                    i = len(self.names)
                    self.names.append(info.name)
                self.slot[info.name] = i
                self.alive[i] = True
                self.layout_gen += 1
            else:
                info.pods, info.requested = old.pods, old.requested
            if old is None:
                for uid in self.by_node.get(info.name, ()):
                    pod = self.pods.get(uid)
                    if pod is not None:
                        info.add_pod(uid, pod.requests)
            self.nodes[info.name] = info
            self._write_node(self.slot[info.name], info)
            if old is None or old.static_signature() != info.static_signature():
                self.static_gen += 1
            return True

    def delete_node(self, name: str) -> None:
        with self.lock:
            if self.nodes.pop(name, None) is None:
                return
            i = self.slot.pop(name)
            self.names[i] = None
            self.alive[i] = False
            self._free_slots.append(i)
            self.static_gen += 1
            self.layout_gen += 1

    # ------------------------------------------------------------ pods

    def _place(self, uid: str, pod: PodInfo | None) -> None:
        """Record (or, with None, drop) the pod counted on a node and its labels in the label index."""
        old = self.placed.pop(uid, None)
        if old is not None:
            podaffinity.ungroup(self.with_anti, old.anti_affinity_terms, uid)
            podaffinity.ungroup(self.with_affinity, old.scoring_terms, uid)
            for pair in old.labels.items():
                if (uids := self.by_label.get(pair)) is not None:
                    uids.discard(uid)
                    if not uids:
                        del self.by_label[pair]
        if pod is not None:
            self.placed[uid] = pod
            if pod.anti_affinity_terms:
                self.with_anti.setdefault(pod.anti_affinity_terms, set()).add(uid)
            if pod.scores_affinity:
                self.with_affinity.setdefault(pod.scoring_terms, set()).add(uid)
            for pair in pod.labels.items():
                self.by_label.setdefault(pair, set()).add(uid)

    def _carrying(self, selectors: Iterable[LabelSelector]) -> Iterable[str]:
        """Uids of the placed pods that may match one of `selectors` (all of them when one cannot narrow)."""
        out: set[str] = set()
        for selector in selectors:
            pairs = selector.narrowing()
            if pairs is None:
                return self.pod_node
            for pair in pairs:
                out |= self.by_label.get(pair, set())
        return out

    def _account(self, uid: str, node_name: str | None, requests: dict[str, int], pod: PodInfo | None = None) -> None:
        old = self.pod_node.get(uid)
        if old is not None:
            self._add_requests(old, uid, requests, -1)
            self.by_node.get(old, set()).discard(uid)
            del self.pod_node[uid]
            self._place(uid, None)
        if node_name:
            if pod is not None:
                self._place(uid, pod)
            self.pod_node[uid] = node_name
            self.by_node.setdefault(node_name, set()).add(uid)
            self._add_requests(node_name, uid, requests, +1)

    def upsert_pod(self, obj: dict[str, Any]) -> tuple[PodInfo, PodInfo | None]:
        """Record a pod from the informer; returns (new, old)."""
        pod = PodInfo.from_dict(obj)
        with self.lock:
            old = self.pods.get(pod.uid)
            self.pods[pod.uid] = pod
            target = pod.node_name if pod.node_name and not pod.terminal else None
            if target is None and pod.uid in self.assumed and not pod.terminal:
                return pod, old  # still in our ledger: the bind has not reached the informer yet
            self.assumed.pop(pod.uid, None)
            if old is not None and self.pod_node.get(pod.uid) == target and old.requests == pod.requests:
                if target:
                    self._place(pod.uid, pod)  # its labels may have changed
                return pod, old
            if pod.uid in self.pod_node:
                # remove with the requests that were counted
                counted = self.nodes[self.pod_node[pod.uid]].pods.get(pod.uid) \
                    if self.pod_node[pod.uid] in self.nodes else None
                self._account(pod.uid, None, counted if counted is not None else pod.requests)
            if target:
                self._account(pod.uid, target, pod.requests, pod)
            return pod, old

    def delete_pod(self, uid: str) -> PodInfo | None:
        with self.lock:
            pod = self.pods.pop(uid, None)
            self.assumed.pop(uid, None)
            if uid in self.pod_node:
                node = self.nodes.get(self.pod_node[uid])
                counted = node.pods.get(uid) if node is not None else None
                self._account(uid, None, counted or (pod.requests if pod else {}))
            return pod

    def assume(self, pod: PodInfo, node_name: str) -> None:
        """Count a pod on a node before the bind is seen by the informer (the ledger)."""
        with self.lock:
            self.assumed[pod.uid] = node_name
            self._account(pod.uid, node_name, pod.requests, pod)

    def forget(self, uid: str) -> None:
        """Undo :meth:`assume` (the bind failed)."""
        with self.lock:
            if self.assumed.pop(uid, None) is None:
                return
            node = self.nodes.get(self.pod_node.get(uid, ""))
            counted = node.pods.get(uid) if node is not None else None
            self._account(uid, None, counted or {})

    # ------------------------------------------------------------ filtering

    def static_mask(self, pod: PodInfo) -> np.ndarray:
        """Nodes passing every static filter, cached per pod signature (caller holds the lock)."""
        cached = self._static_cache.get(pod.signature)
        if cached is not None and cached[0] == self.static_gen:
            return cached[1]
        mask = np.zeros(self._cap, dtype=bool)
        filters = self.static_filters
        for name, i in self.slot.items():
            node = self.nodes[name]
            mask[i] = all(f.filter(pod, node) is None for f in filters)
        if len(self._static_cache) > 1024:
            self._static_cache.clear()
        self._static_cache[pod.signature] = (self.static_gen, mask)
        return mask

    def fit_mask(self, pod: PodInfo) -> np.ndarray:
        """Vector form of NodeResourcesFit over all slots (caller holds the lock)."""
        n = self.size
        mask = self.alive[:n] & (self.alloc[PODS][:n] - self.count[:n] >= 1)
        for res, q in pod.requests.items():
            if q <= 0:
                continue
            if res not in self.alloc:
                return np.zeros(n, dtype=bool)
            mask &= self.alloc[res][:n] - self.req[res][:n] >= q
        return mask

    @property
    def _nodes_gen(self) -> int:
        """Changes whenever a node's static fields or the slots do: what the label caches below are valid for."""
        return (self.static_gen << 32) + self.layout_gen

    def _domain(self, key: str) -> dict[str, np.ndarray]:
        """Slots of the nodes per value of label `key`, cached until a node's static fields or the slots change."""
        gen = self._nodes_gen
        cached = self._domains.get(key)
        if cached is not None and cached[0] == gen:
            return cached[1]
        groups: dict[str, list[int]] = {}
        for name, i in self.slot.items():
            value = self.nodes[name].labels.get(key)
            if value is not None:
                groups.setdefault(value, []).append(i)
        out = {v: np.array(ix, dtype=np.int64) for v, ix in groups.items()}
        if len(self._domains) > 256:
            self._domains.clear()
        self._domains[key] = (gen, out)
        return out

    def _codes(self, key: str) -> tuple[list[str], np.ndarray]:
        """The values of label `key` and, per slot, the index of its node's value (-1: no such label or node)."""
        gen = self._nodes_gen
        cached = self._codes_cache.get(key)
        if cached is not None and cached[0] == gen:
            return cached[1]
        domain = self._domain(key)
        values = list(domain)
        code = np.full(self._cap, -1, dtype=np.int64)
        for k, value in enumerate(values):
            code[domain[value]] = k
        if len(self._codes_cache) > 256:
            self._codes_cache.clear()
        self._codes_cache[key] = (gen, (values, code))
        return values, code

    def _plugin_mask(self, pod: PodInfo, plugin: FilterPlugin) -> np.ndarray:
        """Slots passing one static filter plugin, cached per pod signature like :meth:`static_mask`."""
        key = f"{plugin.name}\0{pod.signature}"
        cached = self._static_cache.get(key)
        if cached is not None and cached[0] == self.static_gen:
            return cached[1]
        mask = np.zeros(self._cap, dtype=bool)
        for name, i in self.slot.items():
            mask[i] = plugin.filter(pod, self.nodes[name]) is None
        self._static_cache[key] = (self.static_gen, mask)
        return mask

    def prefilter(self, pod: PodInfo) -> PreFilter:
        """PodTopologySpread's and InterPodAffinity's PreFilter for the pod (caller holds the lock): compute it once
        per cycle and hand it to :meth:`feasible` and :meth:`explain`."""
        return prefilter.run(self, pod)

    def feasible(self, pod: PodInfo, pre: PreFilter | None = None) -> np.ndarray:
        """Slot indices of the nodes where the pod fits (caller holds the lock); `pre`: the pod's
        :meth:`prefilter`, computed here when not given."""
        self._column(PODS)
        n = self.size
        mask = self.static_mask(pod)[:n] & self.fit_mask(pod)
        pre = pre or self.prefilter(pod)
        spread, cycle = pre.spread, pre.affinity
        if spread is not None and mask.any():
            mask &= podspread.feasible_mask(pod, spread, self.alive[:n], self._codes)
        if cycle is not None and (pod.affinity_terms or not cycle.idle) and mask.any():
            mask &= feasible_mask(pod, cycle, self.alive[:n], self._domain)
        return np.flatnonzero(mask)

    def explain(self, pod: PodInfo, names: Iterable[str] | None = None,
                pre: PreFilter | None = None) -> dict[str, Status]:
        """Slow path for failures: each node's (of `names`, in that order, when given) first failing filter
        (caller holds the lock); a name that is no node is left out. `pre`: as for :meth:`feasible`."""
        out: dict[str, Status] = {}
        pre = pre or self.prefilter(pod)
        spread, cycle = pre.spread, pre.affinity
        for name in self.nodes if names is None else names:
            if (node := self.nodes.get(name)) is None:
                continue
            for f in self.filters:
                status = f.filter(pod, node)
                if status is not None:
                    out[name] = status
                    break
            else:  # then PodTopologySpread and InterPodAffinity, in the order of kube-scheduler's default profile
                status = podspread.filter_node(pod, spread, node.labels) if spread is not None else None
                if status is None and cycle is not None:
                    status = filter_node(pod, cycle, node.labels)
                out[name] = status
        return out
