"""A run killed at its timeout is stored failed with a detail that names the fix. It said 'raise timeout_s': a field
of the run event, not of the campaign file, whose key is `timeout:` (fault scenario: a benchmark hanging past its
timeout on a host)."""

from __future__ import annotations

from podtax import campaign, events
from podtax.derive import derive


def test_a_timed_out_run_names_the_campaign_key_to_raise() -> None:
    run = events.RunSpec(run_id="r1", campaign="c", node="n1", env="host", test="sysbench-cpu",
                         params={"threads": 1}, timeout_s=5)
    now = events.now()
    out = derive(events.RawLog(run=run, stdout="", exit_code=None, started_at=now, ended_at=now, timed_out=True))
    assert isinstance(out, events.RunFailedV1) and out.data.reason == "timeout"
    assert "timeout_s" not in out.data.detail, out.data.detail
    assert "raise the campaign's `timeout:` (seconds)" in out.data.detail, out.data.detail
    assert "timeout" in campaign.Campaign.model_fields  # the key it names
