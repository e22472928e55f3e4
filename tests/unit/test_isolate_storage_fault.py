"""A storage fault during poison isolation is not poison (found by the fault suite's full disk): when the
disk fills up while a failed batch is bisected, some halves are committed and others fail with an I/O
error; those events are valid and must be retried, not dead-lettered."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from podtax_analyzer.isolate import write_isolating


@dataclass(frozen=True)
class Ev:
    id: str


class IOException(Exception):  # noqa: N818 - the name DuckDB gives its I/O errors
    pass


class ConversionException(Exception):  # noqa: N818 - the name DuckDB gives a value it cannot store
    pass


def writer(fail_when):  # noqa: ANN001, ANN201
    def write(batch: list[Ev]) -> set[str]:
        exc = fail_when(batch)
        if exc:
            raise exc
        return {e.id for e in batch}
    return write


BATCH = [Ev(str(i)) for i in range(8)]


def test_a_poison_event_alone_is_rejected() -> None:
    write = writer(lambda b: ConversionException("out of range") if any(e.id == "3" for e in b) else None)
    stored, poison = write_isolating(write, BATCH)
    assert set(poison) == {"3"} and stored == {e.id for e in BATCH} - {"3"}


def test_a_disk_that_fills_up_during_bisection_rejects_nothing() -> None:
    calls = []

    def fail_when(batch: list[Ev]) -> Exception | None:
        calls.append(batch)
        if len(calls) == 1 or batch[0].id >= "4":  # the first half fits, then the disk is full
            return IOException("Could not write file: No space left on device")
        return None

    with pytest.raises(IOException):
        write_isolating(writer(fail_when), BATCH)
