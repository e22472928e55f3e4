"""parentdeath.sigterm_with, the parent-death signal of `podtax up`'s children. When `up` had died before the child
armed it, the child sent itself SIGTERM, but `up`'s own SIGTERM handler (its _stop, installed before the children
start) is inherited until exec and swallowed it: the child ran on, an orphan (rF, session 56). And the kernel sends
the signal when the thread that started the child ends: armed from a worker thread, nats-server was stopped as that
thread ended (rF, session 56)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest
from podtax.parentdeath import sigterm_with

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's prctl")


@pytest.fixture
def up_handler() -> Iterator[None]:
    """A SIGTERM handler in this process, as `podtax up` installs before it starts its children."""
    old = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def test_a_child_whose_parent_already_died_ends_despite_the_parents_handler(up_handler: None) -> None:
    gone = 2 ** 22 + 1  # above Linux's pid_max: no parent of ours
    proc = subprocess.run([sys.executable, "-c", "pass"], preexec_fn=sigterm_with(gone),  # noqa: PLW1509
                          start_new_session=True, timeout=60)
    assert proc.returncode == 143  # as SIGTERM's default action says it (128 + 15); was 0: it ran on


def test_a_child_whose_parent_lives_runs(up_handler: None) -> None:
    proc = subprocess.run([sys.executable, "-c", "raise SystemExit(7)"], preexec_fn=sigterm_with(os.getpid()),  # noqa: PLW1509
                          start_new_session=True, timeout=60)
    assert proc.returncode == 7


def test_not_armed_from_another_thread() -> None:
    got: list[object] = []
    worker = threading.Thread(target=lambda: got.append(sigterm_with(1)))
    worker.start()
    worker.join(60)
    assert got == [None]
    assert sigterm_with(1) is not None
