"""Node scores from the analyzer's KV bucket, kept in memory and versioned per benchmark group.

Only scores of this scheduler's cluster and configured environment are kept (the KV watch is
filtered by key prefix, and each value is checked again). A group is one (test, metric,
params_key): nodes are only ever compared inside a group.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from podtax import subjects
from podtax.events import NodeScore
from pydantic import ValidationError

log = logging.getLogger("podtax.scheduler.scores")
Group = tuple[str, str, str]  # (test, metric, params_key)
MAX_RUNS = 10**9  # a run count above it measures nothing


@dataclass(frozen=True, slots=True)
class Score:
    node: str
    mean: float
    median: float
    n: int
    updated_ts: float  # unix seconds
    higher_is_better: bool
    unit: str
    ci_low: float | None = None  # 95% interval of the median (metric unit); None below 6 runs
    ci_high: float | None = None
    flags: tuple[str, ...] = ()  # analyzer flags: why the runs should not drive placement
    tool_archs: tuple[str, ...] = ()  # the architectures its runs' tool executables were built for (known ones)


class ScoreStore:
    def __init__(self, cluster: str, env: str) -> None:
        self.cluster = cluster
        self.env = env
        self.lock = threading.Lock()
        self.groups: dict[Group, dict[str, Score]] = {}
        self.version: dict[Group, int] = {}
        self._keys: dict[str, tuple[Group, str]] = {}
        self.updates = 0
        self.unavailable: str | None = None  # why there are no scores at all (the bucket does not exist yet)

    @property
    def key_filter(self) -> str:
        """KV subject filter matching only this cluster's scores of the chosen environment."""
        return f"{subjects.kv_token(self.cluster)}.{self.env}.>"

    def put(self, key: str, value: bytes | str) -> bool:
        try:
            # fields this scheduler does not know (a newer analyzer's) are ignored, as events.decode ignores them
            s = NodeScore.model_validate_json(value, extra="ignore")
        except ValidationError as exc:
            log.warning("ignoring invalid score at %s: %s", key, exc.errors()[0]["msg"])
            return False
        return self.put_score(s, key)

    def put_score(self, s: NodeScore, key: str | None = None) -> bool:
        if s.cluster != self.cluster or s.env != self.env:
            return False
        if s.n > MAX_RUNS:  # a hostile or broken message: 10**400 runs did not fit a float and failed every pod
            log.warning("ignoring invalid score at %s: its run count is above %d", key, MAX_RUNS)
            return False
        group: Group = (s.test, s.metric, s.params_key)
        key = key or subjects.score_key(s.cluster, s.env, s.node, s.test, s.metric, s.params_key)
        score = Score(s.node, s.mean, s.median, s.n, s.updated_at.timestamp(), s.higher_is_better, s.unit,
                      s.ci_low, s.ci_high, tuple(s.flags), tuple(s.tool_archs))
        with self.lock:
            previous = self._keys.get(key)
            if previous is not None and previous != (group, s.node):
                self._drop(key)
            self._keys[key] = (group, s.node)
            self.groups.setdefault(group, {})[s.node] = score
            self.version[group] = self.version.get(group, 0) + 1
            self.updates += 1
        return True

    def _drop(self, key: str) -> None:
        entry = self._keys.pop(key, None)
        if entry is None:
            return
        group, node = entry
        nodes = self.groups.get(group, {})
        nodes.pop(node, None)
        self.version[group] = self.version.get(group, 0) + 1
        if not nodes:
            self.groups.pop(group, None)

    def delete(self, key: str) -> None:
        with self.lock:
            self._drop(key)
            self.updates += 1

    def groups_for(self, test: str) -> dict[Group, int]:
        """Groups of one test with their versions (cheap: no copy of the scores)."""
        with self.lock:
            return {g: self.version.get(g, 0) for g in self.groups if g[0] == test}

    def tests(self) -> list[str]:
        """The tests that have scores, sorted."""
        with self.lock:
            return sorted({g[0] for g in self.groups})

    def snapshot(self, group: Group) -> tuple[int, dict[str, Score]]:
        with self.lock:
            return self.version.get(group, 0), dict(self.groups.get(group, {}))
