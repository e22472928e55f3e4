"""Which candidates' benchmark scores come from tool executables built for different architectures on one kind of
machine (scoring.py, point 2).

A score names the architectures its runs' tool executables were built for (NodeScore.tool_archs, from each run's
ELF header). A native build on each node is that node's speed: an x86 server's x86_64 sysbench and a Raspberry Pi's
aarch64 one rank the two machines. Only another build on the same kind of machine confounds a ranking: a 32-bit
armhf sysbench on some arm64 nodes, the arm64 one on others, the same version being other code. The kind of machine
is the node's ``kubernetes.io/arch`` label (the kubelet sets it: amd64, arm64, arm), which the scheduler holds for
every node. A node without it may be of any kind: it is judged with the nodes of each label (and with the other
unlabelled ones), so an unlabelled armhf-scored node beside an arm64-labelled node scored by the arm64 build is not
ranked against it. Only builds of one family mix (podtax.archfamily: arm beside aarch64, i386 beside x86_64): an
unlabelled Pi scored by its aarch64 build is ranked against an amd64 server scored by its x86_64 one, as two labelled
nodes are. A score naming no architecture (an older wrapper or agent) is compared with any.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from podtax.archfamily import emulated, family

from podtax_scheduler.model import ARCH_LABEL
from podtax_scheduler.state import ClusterState

MIXED_ARCH = "BenchmarkMixedArch"  # the Warning Event's reason: the candidates' scores name other tool architectures
NAMES_SHOWN = 3
UNLABELLED = "unlabelled"


@dataclass(slots=True)
class ToolArchs:
    """One group's tool architectures by slot ("+"-joined for a score of several; absent: none named), and per slot
    the labels its node is judged under (kinds: its label; an unlabelled node's UNLABELLED and every label of the
    group's nodes; read at state.static_gen kinds_gen). can_mix: some label has scores of two tool architectures in
    the group; else no pod's candidates can mix and may_mix answers at once."""

    by_slot: dict[int, str]
    n_archs: int = 0
    kinds: dict[int, tuple[str, ...]] = field(default_factory=dict)
    kinds_gen: int = -1
    can_mix: bool = False

    def __post_init__(self) -> None:
        self.n_archs = len(set(self.by_slot.values()))


def _read_kinds(archs: ToolArchs, state: ClusterState) -> None:
    """archs.kinds and can_mix for the nodes' labels now (read again only when a node's labels may have changed)."""
    if archs.kinds_gen == state.static_gen:
        return
    labels: dict[int, str | None] = {}
    for i in archs.by_slot:
        node = state.nodes.get(str(state.names[i]))
        labels[i] = node.arch if node is not None else None
    every = (UNLABELLED, *sorted({label for label in labels.values() if label}))
    kinds = {i: (label,) if label else every for i, label in labels.items()}
    per_kind: dict[tuple[str, str], set[str]] = {}
    for i, arch in archs.by_slot.items():
        for kind in kinds[i]:
            per_kind.setdefault((kind, family(arch)), set()).add(arch)
    archs.kinds, archs.kinds_gen = kinds, state.static_gen
    archs.can_mix = any(len(a) > 1 for a in per_kind.values())


def may_mix(archs: ToolArchs, state: ClusterState) -> bool:
    """Whether any candidates of this group can mix tool architectures on nodes of one label (cheap when not)."""
    if archs.n_archs < 2:
        return False
    _read_kinds(archs, state)
    return archs.can_mix


def mixed_archs(archs: ToolArchs, state: ClusterState, slots: np.ndarray) -> dict[tuple[str, str], list[int]]:
    """The slots of each (node label, tool architecture) among `slots`, on the labels whose scores there name more
    than one tool architecture (else {}): those nodes' differences may be the executables' code, not the nodes'."""
    if not may_mix(archs, state):
        return {}
    by_kind: dict[tuple[str, str], dict[str, list[int]]] = {}
    for i in slots.tolist():
        if (arch := archs.by_slot.get(i)) is not None:
            for kind in archs.kinds[i]:
                by_kind.setdefault((kind, family(arch)), {}).setdefault(arch, []).append(i)
    return {(kind, arch): s for (kind, _), by_arch in by_kind.items() if len(by_arch) > 1
            for arch, s in by_arch.items()}


def same_build(archs: ToolArchs, candidates: np.ndarray, slots: np.ndarray) -> list[int]:
    """Those of `slots` whose scores would not mix tool architectures with the candidates' (read after may_mix):
    none when the candidates mix."""
    seen: dict[tuple[str, str], set[str]] = {}
    for i in candidates.tolist():
        if (arch := archs.by_slot.get(i)) is not None:
            for kind in archs.kinds[i]:
                seen.setdefault((kind, family(arch)), set()).add(arch)
    if any(len(a) > 1 for a in seen.values()):
        return []
    return [i for i in slots.tolist() if (arch := archs.by_slot.get(i)) is None
            or all(seen.get((kind, family(arch)), {arch}) == {arch} for kind in archs.kinds[i])]


def emulated_here(tool_archs: tuple[str, ...], state: ClusterState, node: str) -> bool:
    """Whether every tool architecture a score names runs only emulated on its node's kubernetes.io/arch (an amd64
    image's x86_64 sysbench on an arm64 node: qemu-user answers uname with x86_64, so the runs' blocks agree and the
    analyzer cannot tell). An unlabelled node or a score naming none says nothing; a 32-bit label (arm, 386: maybe a
    32-bit kubelet on a 64-bit kernel) takes its family's 64-bit builds as native, not other families'
    (podtax.archfamily.emulated: an x86_64 tool on an arm label is emulated). A kubesim node (podtax.io/simulated: its
    exec kubelet runs the benchmarks on the host running kubesim, whatever its label) says nothing either."""
    info = state.nodes.get(node)
    label = info.arch if info is not None and not info.simulated else None
    return bool(tool_archs) and label is not None and all(emulated(a, label) for a in tool_archs)


def emulated_by_label(by_slot: dict[int, str], skip: dict[int, object], state: ClusterState) -> dict[int, str]:
    """The slots (of by_slot: a group's "+"-joined tool architectures, less those in skip) whose score emulated_here
    takes as EMULATED, each with "<tool archs> on <label>"; judged once per tool architectures and label."""
    out: dict[int, str] = {}
    seen: dict[tuple[str, str | None], bool] = {}
    for i, joined in by_slot.items():
        info = state.nodes.get(str(state.names[i]))
        if i in skip or info is None or info.simulated:
            continue
        label = info.labels.get(ARCH_LABEL)
        said = seen.get((joined, label))
        if said is None:
            said = seen[(joined, label)] = emulated_here(tuple(joined.split("+")), state, str(state.names[i]))
        if said:
            out[i] = f"{joined} on {info.arch}"
    return out


def mixed_said(state: ClusterState, mixed: dict[tuple[str, str], list[int]]) -> str:
    """The Warning's words: per label, each tool architecture and its nodes."""
    kinds: dict[str, list[str]] = {}
    for (kind, arch), slots in sorted(mixed.items()):
        more = f" and {len(slots) - NAMES_SHOWN} more" if len(slots) > NAMES_SHOWN else ""
        names = ", ".join(str(state.names[i]) for i in slots[:NAMES_SHOWN])
        kinds.setdefault(kind, []).append(f"{arch} on {names}{more}")
    nodes = "; ".join(f"{kind} nodes: {'; '.join(said)}" for kind, said in kinds.items())
    return (f"the candidate nodes' benchmark scores come from tool executables built for different architectures "
            f"on nodes of one architecture ({nodes}), so their differences may be the code's, not the nodes'; "
            f"placed by resources alone")
