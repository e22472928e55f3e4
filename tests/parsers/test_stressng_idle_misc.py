"""A stressor that completed 0 bogo ops may still print miscellaneous metrics that are real measurements: review r3's
capture (stress-ng 0.15.06, tests/corpus/debian12-x86_64, COMMANDS.tsv) of `stress-ng --class memory --sequential 1
-t 1 --metrics-brief`: memrate 0 bogo ops but `4376.94 write64stoq MB per sec`, tree 0 bogo ops but `964403.80 avl
tree operations per sec`. 4dacf29 dropped them with the row's figures; now only the row's bogo-op figures are left
out (NO_WORK), in the table and in the --yaml report alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import parse_text

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "debian12-x86_64"


@pytest.mark.parametrize("form", ["log", "yaml"])
def test_the_miscellaneous_metrics_of_a_0_bogo_op_stressor_are_read(form: str) -> None:
    parsed = parse_text((CORPUS / f"stress-ng-class-memory-seq1-brief.{form}").read_text(encoding="utf-8"))
    values = parsed.values()
    assert round(values["memrate_write64stoq_mb_per_sec"], 2) == 4376.94
    assert round(values["memrate_write1024_mb_per_sec"], 2) == 4123.92
    assert round(values["tree_avl_tree_operations_per_sec"], 2) == 964403.80
    assert not [k for k in values if k.startswith(("memrate_bogo_ops", "tree_bogo_ops", "memrate_real_time"))]
    for name in ("memrate", "tree"):
        assert f"NO_WORK: stress-ng's {name} stressor completed 0 bogo ops; its bogo-op figures are not read" \
            in parsed.flags
