"""Golden file: the JSON report of the fixed synthetic campaign.

Regenerate after an intended change with PODTAX_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from analysis_synth import fixture_campaign, insert_cells
from podtax_analyzer.comparisons import compare_campaign

GOLDEN = Path(__file__).parent / "golden" / "report_synthetic.json"


def _rounded(obj):
    if isinstance(obj, float):
        return float(f"{obj:.6g}")
    if isinstance(obj, dict):
        return {k: _rounded(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rounded(v) for v in obj]
    return obj


def test_json_report_matches_golden(con):
    insert_cells(con, fixture_campaign())
    got = _rounded(compare_campaign(con, "synthetic").model_dump(mode="json"))
    if os.environ.get("PODTAX_UPDATE_GOLDEN") or not GOLDEN.exists():
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(got, indent=2, ensure_ascii=False) + "\n")
    want = json.loads(GOLDEN.read_text())
    assert got == want
