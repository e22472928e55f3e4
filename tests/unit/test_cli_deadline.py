"""The CLI deadline (issue 12, item 10): a step NATS never answers ends with one line, not a hang."""

from __future__ import annotations

import asyncio

import pytest
import typer
from podtax.bus import BusError
from podtax.cli import deadline


async def _never() -> None:
    await asyncio.Event().wait()  # what a publish to a dead server does: wait for ever


def test_within_gives_up_and_says_what_it_was_doing() -> None:
    with pytest.raises(BusError, match="did not answer within 0.2 s while publishing things"):
        asyncio.run(deadline.within(_never(), "publishing things", 0.2))


def test_run_exits_1_with_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(deadline.ENV, "0.2")
    with pytest.raises(typer.Exit) as exit_info:
        deadline.run(_never(), "reading the campaign state")
    assert exit_info.value.exit_code == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "reading the campaign state" in err and deadline.ENV in err


@pytest.mark.parametrize("bad", ["0", "-1", "abc", "1e9"])
def test_a_bad_setting_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                        bad: str) -> None:
    monkeypatch.setenv(deadline.ENV, bad)
    with pytest.raises(typer.Exit) as exit_info:
        deadline.run(asyncio.sleep(0), "anything")
    assert exit_info.value.exit_code == 2
    said = capsys.readouterr().err
    # 0 is refused, so the line may not say "between 0 and 86400" (it did)
    assert ("is not a number" if bad == "abc" else "must be more than 0 and at most 86400 seconds") in said


def test_default_and_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(deadline.ENV, raising=False)
    assert deadline.seconds() == deadline.DEFAULT_S
    monkeypatch.setenv(deadline.ENV, "2.5")
    assert deadline.run(asyncio.sleep(0, result=7), "x") == 7
