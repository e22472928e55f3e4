"""`podtax campaign submit`'s reading of the analyzer's campaign list (podtax.cli.earlier.earlier_campaign): a
name the analyzer holds, with results or only submitted, is refused naming both; another name is not."""

from __future__ import annotations

from podtax.cli.earlier import earlier_campaign

BASE = "http://127.0.0.1:8700"


def test_a_name_the_analyzer_holds_is_refused_saying_what_it_holds() -> None:
    held = [{"name": "other", "runs_ok": 9, "runs_failed": 0},
            {"name": "quick", "runs_ok": 20, "runs_failed": 1, "cells": 4}]
    why = earlier_campaign("quick", BASE, held)
    assert why == (f"campaign 'quick' already has results in the analyzer at {BASE} (20 ok, 1 failed: an earlier "
                   f"submission, e.g. before a NATS reset); its run ids would be this one's and the analyzer keeps "
                   f"the first result of each: choose another name")


def test_a_name_only_submitted_before_is_refused_too() -> None:
    why = earlier_campaign("quick", BASE, [{"name": "quick", "runs_ok": 0, "runs_failed": 0}])
    assert why is not None and why.startswith(f"campaign 'quick' was already submitted to the analyzer at {BASE} "
                                              f"(no results yet: an earlier submission")


def test_a_name_the_analyzer_does_not_hold_is_not_refused() -> None:
    assert earlier_campaign("quick", BASE, [{"name": "quick-2", "runs_ok": 5, "runs_failed": 0}]) is None
    assert earlier_campaign("quick", BASE, []) is None
