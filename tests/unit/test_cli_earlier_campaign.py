"""`podtax campaign submit`'s refusal of a name the analyzer holds (podtax.cli.earlier.earlier_campaign, given the
analyzer's GET /api/campaigns/{name} answer): with results, or only submitted, the line says which and names the
analyzer. The 404/401/5xx readings are in tests/report/test_campaign_lookup.py."""

from __future__ import annotations

from podtax.cli.earlier import earlier_campaign

BASE = "http://127.0.0.1:8700"


def test_a_name_the_analyzer_holds_is_refused_saying_what_it_holds() -> None:
    why = earlier_campaign("quick", BASE, {"name": "quick", "runs_ok": 20, "runs_failed": 1, "cells": 4})
    assert why == (f"campaign 'quick' already has results in the analyzer at {BASE} (20 ok, 1 failed: an earlier "
                   f"submission, e.g. before a NATS reset); its run ids would be this one's and the analyzer keeps "
                   f"the first result of each: choose another name")


def test_a_name_only_submitted_before_is_refused_too() -> None:
    why = earlier_campaign("quick", BASE, {"name": "quick", "runs_ok": 0, "runs_failed": 0})
    assert why.startswith(f"campaign 'quick' was already submitted to the analyzer at {BASE} (no results yet: an "
                          f"earlier submission")


def test_a_name_with_no_run_recorded_is_not_refused() -> None:
    assert earlier_campaign("quick", BASE, {"name": "quick", "runs_ok": 0, "runs_failed": 0, "runs": 0}) is None
