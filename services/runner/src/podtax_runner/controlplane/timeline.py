"""The per-object timeline of a control-plane run, written as the raw log (docs/control-plane.md).

Times are seconds on the client's monotonic clock relative to the run's t0; each phase is recorded
once (the first time it is seen). Server timestamps are kept apart. Thread-safe: workers and watch
threads record into one Timeline.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from podtax_runner.retry import did_nothing

FORMAT = 1
VERBS = ("create", "delete", "get", "list", "watch")
HELD = "timed from the first attempt: its phases hold the wait"  # a retry not re-timed (resend); the parser reads it
HELD_SHORT = "timed from the first attempt"  # HELD in an object's list of several reasons (the parser's HELD_WORDS)


def run_label(run_id: str) -> str:
    """The short run token in names and labels (`podtax.io/run`)."""
    return hashlib.sha1(run_id.encode()).hexdigest()[:10]


def retry_reason(exc: BaseException) -> str:
    """An error a call was sent again after, in a few words: '429 Too Many Requests', or the exception's type."""
    status = getattr(exc, "status", None)
    if isinstance(status, int):
        said = getattr(exc, "reason", None) or str(getattr(exc, "text", "")).strip()[:80]  # Kubernetes', Nomad's
        return f"{status} {said}".strip()
    return type(exc).__name__


@dataclass
class ObjectRecord:
    name: str
    t: dict[str, float] = field(default_factory=dict)
    server: dict[str, str] = field(default_factory=dict)
    error: str | None = None

    def line(self) -> dict[str, Any]:
        return {"kind": "object", "name": self.name, "t": self.t, "server": self.server, "error": self.error}


class Timeline:
    def __init__(self, template: str, backend: str, params: dict[str, Any], observe: str,
                 simulated: bool = False) -> None:
        self.template, self.backend, self.params = template, backend, dict(params)
        self.observe, self.simulated = observe, simulated
        self.t0 = time.monotonic()
        self.t0_unix = time.time()
        self.objects: dict[str, ObjectRecord] = {}
        self.requests: Counter[str] = Counter({v: 0 for v in VERBS})  # the run's work: requests_per_object
        # the run's checks before its work (plugin, storage class, namespace, existing volumes): a few a run, whatever
        # its count, so not per object (2 of them made requests_per_object 0.2 higher at count 10, 0.02 at 100)
        self.setup_requests: Counter[str] = Counter()
        self.setup_done: Callable[[], None] = lambda: None  # called once the set-up is done (execute.server_count)
        self._setup = False
        self.apiserver: dict[str, dict[str, float]] | None = None
        self.left_behind = 0
        self.watch_gaps: list[dict[str, Any]] = []  # a watch's drops: {watch, start, end, late: {name: [end points]}}
        # object -> call ('create', 'create consumer', 'delete') -> why it was sent again and whether it was HELD
        self._why: dict[str, dict[str, tuple[str, bool]]] = {}
        # volume-churn on Kubernetes: the class's volumeBindingMode and where provisioned/bound start (podtax.phases
        # provision_start: "node" with WaitForFirstConsumer, else "create"); written in the summary when set
        self.volume_binding: dict[str, str | None] = {}
        # the run failed after measuring (execute.keep): its reason and detail; jsonl() then writes them in the header
        # as `aborted` and no summary line (see jsonl); the parser refuses such a timeline (never a good run)
        self.aborted: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._local = threading.local()  # .gap: the gap whose re-list this thread is recording (watch_gap)

    def now(self) -> float:
        return round(time.monotonic() - self.t0, 6)

    def add(self, name: str) -> ObjectRecord:
        with self._lock:
            return self.objects.setdefault(name, ObjectRecord(name))

    def mark(self, name: str, phase: str, at: float | None = None, not_after: str | None = None) -> bool:
        """Record `phase` of `name` now (or at `at`) unless already recorded; True when recorded. With `not_after`, an
        end point of `name`: never later than it when it is recorded (read under the lock, so one marked meanwhile by
        another thread is seen: a phase from `phase` to `not_after` is never negative)."""
        rec = self.objects.get(name)
        if rec is None or phase in rec.t:
            return False
        with self._lock:
            if phase in rec.t:
                return False
            when = self.now() if at is None else at
            rec.t[phase] = min(when, rec.t.get(not_after, when)) if not_after else when
            gap = getattr(self._local, "gap", None)
            if gap is not None:  # seen only by the re-list after a dropped watch: it happened in the gap
                gap["late"].setdefault(name, []).append(phase)
            return True

    def open_gap(self, watch: str, since: float | None = None) -> dict[str, Any]:
        """A gap of watch `watch` from now (it dropped), or from monotonic `since` (it went silent), until close_gap
        (it is open again): summary `watch_gaps`."""
        start = self.now() if since is None else round(since - self.t0, 6)
        gap: dict[str, Any] = {"watch": watch, "start": start, "end": None, "late": {}}
        with self._lock:
            self.watch_gaps.append(gap)
        return gap

    def discard_gap(self, gap: dict[str, Any]) -> None:
        """Forget a gap that hid nothing (a quiet watch closed and listed again: the list found nothing it missed)."""
        with self._lock:
            if gap in self.watch_gaps and not gap["late"]:
                self.watch_gaps.remove(gap)

    def close_gap(self, gap: dict[str, Any]) -> None:
        gap["end"] = self.now()

    @contextlib.contextmanager
    def in_gap(self, gap: dict[str, Any]) -> Iterator[None]:
        """The end points this thread marks inside are the gap's `late` ones (seen by a re-list during the gap:
        they happened in it, and are timed when seen)."""
        self._local.gap = gap
        try:
            yield
        finally:
            self._local.gap = None

    def resend(self, name: str, point: str | None, why: str, held: bool = False) -> None:
        """The call that started `point` of `name` was refused (`why`: a 429 or 503 with Retry-After, answers that
        say nothing was done: retry.did_nothing) and is sent again now: `point` is re-timed from this attempt, the
        first kept as `first_<point>`, and the summary's `retried` names it (the parser's RETRIED run flag). The
        refused attempts and the wait the server asked for are not the object's latency (an audit: a claim created
        after two 429s was timed bound in 260 ms among claims of 2 ms). `point` None or `held`: not re-timed (HELD),
        and a `point` an earlier refusal re-timed is put back to its first attempt, as HELD says (review r7: a create
        answered 429, then 500, was timed from its second attempt and said 'timed from the first attempt')."""
        rec = self.objects.get(name)
        if rec is None:
            return
        with self._lock:
            # not re-timed: a call that starts no phase (a consumer pod's create: consumer_running is timed from the
            # claim's), one whose attempt got an answer that does not say nothing was done (resender), or one whose
            # refused attempt did its work (an end came before the retry: the claim's DELETED event, then the
            # retry's 404; re-timed, that phase would be negative and the run refused)
            if held or point is None or point not in rec.t or any(
                    v > rec.t[point] for k, v in rec.t.items() if k != point and not k.startswith("first_")):
                if point is not None and f"first_{point}" in rec.t:
                    rec.t[point] = rec.t.pop(f"first_{point}")
                self._why.setdefault(name, {})[why.split(":")[0]] = (bounded(why, 160), True)
                return
            rec.t.setdefault(f"first_{point}", rec.t[point])
            rec.t[point] = self.now()
            self._why.setdefault(name, {})[why.split(":")[0]] = (bounded(why, 200), False)

    @property
    def retried(self) -> dict[str, str | list[str]]:
        """The summary's `retried` (the parser's RETRIED): each object whose calls were sent again, in run order, with
        the last answer of each such call (its create, its consumer's create, its delete: `create: 429 Too Many
        Requests`), a HELD one's marked (its phases are upper bounds); one reason a string (as before), several a list
        sharing one reason's bytes (dispatch.RETRY_BYTES), each HELD one marked `(timed from the first attempt)`.
        Review r6: a delete's replaced the create's, and a DELETE_REFUSED result lost its RETRIED; review r11: the
        create's then always won, and a clean run's held delete (58.6 ms among 0.9-6.8 ms) was shown exact under
        'RETRIED: no figure'; review r14: one reason an object still named only the consumer's of an object whose
        consumer create and delete were both held (its delete said exact), a consumer's replaced its claim's held
        create, and the objects with a delete sent again came first. The parser drops a DELETE_REFUSED result's
        delete reasons (timeline_aborted)."""
        out: dict[str, str | list[str]] = {}
        with self._lock:
            calls = {n: list(self._why[n].values()) for n in self.objects if n in self._why}
        for name, whys in calls.items():
            if len(whys) == 1:
                out[name] = whys[0][0] + (f" ({HELD})" if whys[0][1] else "")
            else:  # within RETRY_BYTES (350): 3 calls' 400 quotes, emoji ... under a 34-character name took up to 341
                # bytes in test_cp_error_size, 344 in review r4's fuzz (1,600 random messages)
                out[name] = [bounded(w, 150 // len(whys)) + (f" ({HELD_SHORT})" if held else "") for w, held in whys]
        return out

    def resender(self, name: str, point: str | None, what: str) -> Callable[[BaseException], None]:
        """The `again` hook of a call that started `point` of `name` (None: a call that starts no phase of it;
        retry.call): resend with its error. Once an attempt of the call got an answer that does not say nothing was
        done (a 500, 502, 504 or a broken connection: a proxy's 504 may come after the delete went through, and Nomad
        then answers the retry 'volume not found'), the call keeps its first time, HELD (an upper bound: it holds
        the wait), as a consumer pod's create does: re-timed from the retry, `deleted` lost the time the deletion
        was already under way and was said exact."""
        held = point is None

        def again(exc: BaseException) -> None:
            nonlocal held
            held = held or not did_nothing(exc)
            self.resend(name, point, f"{what}: {retry_reason(exc)}", held)

        return again

    def has(self, name: str, phase: str) -> bool:
        rec = self.objects.get(name)
        return rec is not None and phase in rec.t

    def server(self, name: str, key: str, value: str | None) -> None:
        rec = self.objects.get(name)
        if rec is not None and value and key not in rec.server:
            rec.server[key] = str(value)

    def fail(self, name: str, reason: str) -> None:
        rec = self.objects.get(name)
        if rec is not None and rec.error is None:
            rec.error = bounded(reason)

    def give_up(self, name: str, reason: str) -> None:
        """Fail `name` as given up now: its end point `given_up` tells the parser that each of its phases that
        had started and not ended took longer than that (a lower bound it counts), not that it never began."""
        self.mark(name, "given_up")
        self.fail(name, reason)

    @contextlib.contextmanager
    def setting_up(self) -> Iterator[None]:
        """The requests made inside (before any worker or watch thread starts) count in setup_requests, not in
        requests; then setup_done is called."""
        self._setup = True
        try:
            yield
        finally:
            self._setup = False
        self.setup_done()

    def count(self, verb: str, n: int = 1) -> None:
        with self._lock:
            (self.setup_requests if self._setup else self.requests)[verb] += n

    def missing(self, phase: str) -> list[str]:
        """Objects without an error that have not reached `phase` yet."""
        return [r.name for r in list(self.objects.values()) if phase not in r.t and r.error is None]

    def errors(self) -> int:
        return sum(1 for r in self.objects.values() if r.error is not None)

    def header(self) -> dict[str, Any]:
        return {"kind": "header", "template": self.template, "backend": self.backend, "format": FORMAT,
                "params": self.params, "t0_unix": self.t0_unix, "observe": self.observe,
                "simulated": self.simulated}

    def summary(self) -> dict[str, Any]:
        return {"kind": "summary", "requests": dict(self.requests), "setup_requests": dict(self.setup_requests),
                "apiserver": self.apiserver,
                "errors": self.errors(), "left_behind": self.left_behind, "watch_gaps": self.watch_gaps,
                "retried": self.retried, "wall_s": self.now(), **self.volume_binding}

    def jsonl(self) -> str:
        """The timeline's lines. Of a run that failed after measuring (`aborted`): the header carries `aborted`
        (reason, detail and what the summary would say) and there is no summary line, so that a parser older than
        the mark refuses it too (a timeline without its summary is `truncated`); with the summary line it took the
        kept timeline for a clean result (review r8: accepted_p50_ms etc., no flag)."""
        if self.aborted:
            summary = {k: v for k, v in self.summary().items() if k != "kind"}
            lines = [{**self.header(), "aborted": {**self.aborted, "summary": summary}},
                     *(r.line() for r in self.objects.values())]
        else:
            lines = [self.header(), *(r.line() for r in self.objects.values()), self.summary()]
        return "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)


ERROR_CHARS = 300  # an object's error, at most (bounded: dispatch.ERROR_BYTES bounds it in the raw-log event)


def encoded_size(text: str) -> int:
    """Bytes `text` takes in the raw-log event: a JSON string in its timeline line (non-ASCII as \\uXXXX), that line a
    JSON string in the event (each backslash and quote escaped again)."""
    return len(json.dumps(json.dumps(text)))


def bounded(reason: str, chars: int = ERROR_CHARS) -> str:
    """`reason` cut to `chars` characters and to `chars` + 20 bytes in the event: a server's message of quotes,
    non-ASCII or control characters takes up to 14 bytes a character there (a character beyond the BMP: 2 x \\uXXXX,
    escaped again), and 300 of them would break dispatch.ERROR_BYTES (RETRY_BYTES for a `retried` why), on which the
    run's size bound rests."""
    text = reason[:chars]
    while (excess := encoded_size(text) - chars - 20) > 0:
        text = text[:len(text) - max(1, excess // 14)]
    return text
