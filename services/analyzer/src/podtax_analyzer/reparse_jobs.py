"""`POST /api/reparse` jobs: one at a time (a second request learns the running job's id), run in a
background thread, with progress counters readable while they run."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

log = logging.getLogger("podtax.analyzer.reparse")
KEEP = 20  # finished jobs remembered for GET /api/reparse/{id}

Progress = Callable[[dict[str, int]], None]


@dataclass
class Job:
    id: str
    campaign: str | None
    started_at: datetime
    state: str = "running"  # running | done | failed
    counts: dict[str, int] = field(default_factory=lambda: {"logs": 0, "results": 0, "failures": 0, "changed": 0,
                                                             "provenance": 0})
    error: str | None = None
    finished_at: datetime | None = None
    done: threading.Event = field(default_factory=threading.Event, repr=False)

    def view(self) -> dict[str, Any]:
        return {"job_id": self.id, "campaign": self.campaign, "state": self.state, "started_at": self.started_at,
                "finished_at": self.finished_at, "error": self.error, **self.counts}


class Busy(Exception):
    def __init__(self, job: Job) -> None:
        super().__init__(f"a reparse is already running: job {job.id} (started {job.started_at:%H:%M:%S} UTC)")
        self.job = job


class ReparseJobs:
    def __init__(self, run: Callable[[str | None, Progress], dict[str, int]]) -> None:
        self._run = run
        self._lock = threading.Lock()
        self.current: Job | None = None
        self.jobs: dict[str, Job] = {}

    def start(self, campaign: str | None) -> Job:
        """Start a job, or raise Busy with the one that is running."""
        with self._lock:
            if self.current is not None and not self.current.done.is_set():
                raise Busy(self.current)
            job = self.current = Job(uuid.uuid4().hex[:12], campaign, datetime.now(UTC))
            self.jobs[job.id] = job
            for old in list(self.jobs)[:-KEEP]:
                del self.jobs[old]
        threading.Thread(target=self._work, args=(job,), name=f"reparse-{job.id}", daemon=True).start()
        return job

    def _work(self, job: Job) -> None:
        try:
            job.counts.update(self._run(job.campaign, job.counts.update))
            job.state = "done"
        except Exception as exc:  # noqa: BLE001 - reported to the caller, not lost
            log.exception("reparse job %s failed", job.id)
            job.state, job.error = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            job.finished_at = datetime.now(UTC)
            job.done.set()
