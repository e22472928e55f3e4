"""One log must not take its batch down (issue 12, item 3): provenance lines that no model accepts
(NaN, a word, a zero thread count) make a `bad-provenance` failure of that run; an unexpected error in
`derive` rejects only that log, with its own reason."""

from __future__ import annotations

import pytest
from podtax import events
from podtax.derive import derive
from podtax_parser import service


def raw(run_id: str, stdout: str) -> events.RawLogV1:
    run = events.RunSpec(run_id=run_id, campaign="c", node="n", env="host", test="sysbench-cpu",
                         params={"threads": 1})
    now = events.now()
    return events.raw_log(events.RawLog(run=run, stdout=stdout, exit_code=0, started_at=now, ended_at=now), "t")


@pytest.mark.parametrize(("line", "field"), [("cpu_limit=nan", "cpu_limit"), ("cpu_limit=abc", "abc"),
                                             ("hw_threads=0", "hw_threads")])
def test_bad_provenance_is_a_failure_of_that_run(line: str, field: str) -> None:
    out = derive(raw("r", f"#podtax phase=before {line}\n").data)
    assert isinstance(out, events.RunFailedV1) and out.data.reason == "bad-provenance"
    assert field in out.data.detail


def test_an_unexpected_error_rejects_only_its_log(monkeypatch: pytest.MonkeyPatch) -> None:
    batch = [raw(f"r{i}", "") for i in range(5)]

    def derive_or_crash(log: events.RawLog, source: str) -> events.Envelope:
        if log.run.run_id == "r2":  # fault injection: a parser bug on one log
            raise RuntimeError("parser bug")
        return derive(log, source)

    monkeypatch.setattr(service, "derive", derive_or_crash)
    outcomes, poison = service.derive_all(batch)  # type: ignore[arg-type]
    assert len(outcomes) == 4 and list(poison) == [batch[2].id]
    assert poison[batch[2].id] == "poison: RuntimeError: parser bug"
