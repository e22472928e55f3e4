"""`podtax campaign status`'s rows: per node, its runs done, failed, cancelled and left, from the campaign's state."""

from __future__ import annotations

from typing import Any

from podtax import events

FINISHED = ("done", "failed", "cancelled")  # a run's end states in the runner's state: counted apart


def progress_rows(state: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per node: runs done, failed (a result never came: run.failed, as the analyzer counts them), cancelled
    (planned, then cancelled with the campaign: never ran), the total, and the run time of the timed ones."""
    if "progress" in state or "runs" not in state:  # the header of a campaign saved as per-run documents
        rows = {}
        for node, p in state.get("progress", {}).items():
            finished = {k: int(p.get(k, 0)) for k in FINISHED}
            rows[node] = {**finished,
                          "total": sum(int(p.get(k, 0)) for k in ("planned", "dispatched")) + sum(finished.values()),
                          "seconds": float(p.get("seconds", 0.0)), "timed": int(p.get("timed", 0))}
        return rows
    rows: dict[str, dict[str, float]] = {}
    for s in state["runs"].values():
        node = s["run"]["node"]
        row = rows.setdefault(node, {"done": 0, "failed": 0, "cancelled": 0, "total": 0, "seconds": 0.0, "timed": 0})
        row["total"] += 1
        st = s.get("status", "planned")
        if st in FINISHED:
            row[st] += 1
            if s.get("dispatched_at") and s.get("finished_at"):
                row["seconds"] += (events.datetime.fromisoformat(s["finished_at"])
                                   - events.datetime.fromisoformat(s["dispatched_at"])).total_seconds()
                row["timed"] += 1
    return rows


def progress_info(row: dict[str, float]) -> tuple[float, str]:
    """(runs finished, the row's text): '2 done, 0 failed, 22 cancelled, 0 left' (cancelled only when some were)."""
    finished = sum(row[k] for k in FINISHED)
    left = row["total"] - finished
    eta = row["seconds"] / row["timed"] * left if row["timed"] else None
    cancelled = f", {int(row['cancelled'])} cancelled" if row["cancelled"] else ""
    return finished, (f"{int(row['done'])} done, {int(row['failed'])} failed{cancelled}, {int(left)} left"
                      + (f", ETA {eta:,.0f} s" if eta is not None and left else ""))
