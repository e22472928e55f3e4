"""Hand-made control-plane timelines (docs/control-plane.md format) and the events that carry them.

Latencies are drawn from log-normal distributions with a fixed seed; ``scale`` multiplies every
latency of a backend, so a test knows the true nomad/kubernetes ratio it should find.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import numpy as np
from podtax import events
from podtax.derive import derive

# median seconds of each end point after the previous one, per (template, backend)
STEPS = {
    ("volume-churn", "kubernetes"): (("api_accepted", 0.010), ("pv_created", 0.200), ("bound", 0.100)),
    ("volume-churn", "nomad"): (("api_accepted", 0.150),),
    ("pod-startup", "kubernetes"): (("scheduled", 0.020), ("initialized", 0.010), ("ready_to_start_containers", 0.005),
                                    ("started", 0.500), ("containers_ready", 0.080), ("ready", 0.020)),
}
DELETE_STEPS = {
    ("volume-churn", "kubernetes"): (("gone", 0.050), ("pv_gone", 0.100)),
    ("volume-churn", "nomad"): (("gone", 0.200),),
    ("pod-startup", "kubernetes"): (("gone", 0.300),),
}


def timeline_text(template: str, backend: str, count: int, seed: int, scale: float = 1.0,
                  sigma: float = 0.2) -> str:
    rng = np.random.default_rng(seed)
    lines = [{"kind": "header", "template": template, "backend": backend, "format": 1,
              "params": {"count": count}, "t0_unix": 1764554400.0, "observe": "watch", "simulated": True}]
    for i in range(count):
        t: dict[str, float] = {"request_sent": round(0.001 * i, 6)}
        now = t["request_sent"]
        for key, median in STEPS[(template, backend)]:
            now += median * scale * float(rng.lognormal(0.0, sigma))
            t[key] = round(now, 6)
        now += 0.5
        t["delete_requested"] = round(now, 6)
        for key, median in DELETE_STEPS[(template, backend)]:
            now += median * scale * float(rng.lognormal(0.0, sigma))
            t[key] = round(now, 6)
        lines.append({"kind": "object", "name": f"podtax-{template[:3]}-{seed}-{i:04d}", "t": t, "server": {},
                      "error": None})
    lines.append({"kind": "summary", "requests": {"create": count, "delete": count, "watch": 2}, "apiserver": None,
                  "errors": 0, "left_behind": 0, "wall_s": 1.0})
    return "\n".join(json.dumps(x) for x in lines) + "\n"


def run_events(campaign: str, env: str, template: str, seq: int, count: int = 20, scale: float = 1.0,
               node: str = "node-1", sigma: float = 0.2, params: dict | None = None,
               ) -> tuple[events.RawLogV1, events.ResultV1 | events.RunFailedV1]:
    """The raw log of one run and the outcome the parser derives from it (``params``: more of the run's params)."""
    run = events.RunSpec(run_id=f"{campaign}-{env}-{template}-{seq}", campaign=campaign, node=node, env=env,
                         test=template, params={"count": count, **(params or {})}, sequence=seq)
    started = datetime(2026, 12, 1, 2, 0, tzinfo=UTC) + timedelta(seconds=10 * seq)
    text = timeline_text(template, env, count, seed=seq * 7 + len(env), scale=scale, sigma=sigma)
    log = events.RawLog(run=run, stdout=text, exit_code=0, started_at=started, ended_at=started + timedelta(seconds=2))
    return events.raw_log(log, "podtax/runner"), derive(log)
