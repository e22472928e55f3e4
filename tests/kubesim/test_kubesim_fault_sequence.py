"""failCreates / failDeletes entries of one object plant a sequence of answers (tools/kubesim faults.py): tried in
order, an entry that has answered its `times` passes calls to the next. An entry after one with `times: 0` that
matches every call it does (the same match, or a broader one) is never answered: refused when the emulator starts,
naming both. Before, the first matching entry decided
alone (tests/controlplane/test_cp_retried_put_back.py drives the sequence through the runner)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from podtax_kubesim.__main__ import main
from podtax_kubesim.faults import parse

NODES = {"nodes": [{"name": "n1"}]}
CLAIM = "persistentvolumeclaims/-0002"


def test_entries_of_one_object_answer_in_turn() -> None:
    faults = parse({"faults": {"failCreates": [{"match": CLAIM, "status": 429, "times": 1},
                                               {"match": CLAIM, "status": 500, "times": 1}]}}, extra=["failCreates"])
    answered: dict[int, int] = {}
    seen = []
    for _ in range(3):
        entry = faults.failing("persistentvolumeclaims", "vc-0002", "create", lambda e: answered.get(id(e), 0))
        seen.append(entry.status if entry else None)
        if entry:
            answered[id(entry)] = answered.get(id(entry), 0) + 1
    assert seen == [429, 500, None]


def test_an_entry_never_answered_stops_the_emulator_naming_both(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    doc = {**NODES, "faults": {"failDeletes": [{"match": CLAIM, "status": 429, "times": 0},
                                               {"match": CLAIM, "status": 500, "times": 1}]}}
    said = ("faults.failDeletes[1] ('persistentvolumeclaims/-0002', status 500) is never answered: entry 0 "
            "('persistentvolumeclaims/-0002', times: 0) comes first and answers every call it matches; give entry 0 a "
            "times to plant a sequence, or remove entry 1")
    _refused(doc, "failDeletes", said, tmp_path, capsys)


@pytest.mark.parametrize("earlier", ["persistentvolumeclaims/", "-0002", "", "persistentvolumeclaims/0002", "2"])
def test_an_entry_covered_by_an_earlier_times_0_one_spelled_otherwise_is_refused(
        earlier: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before (review r2), only an identical match was refused: 'persistentvolumeclaims/' times 0 (every claim) then
    'persistentvolumeclaims/-0002' passed silently, the second never answered."""
    doc = {**NODES, "faults": {"failCreates": [{"match": "jobs/", "status": 500, "times": 0},
                                               {"match": earlier, "status": 429, "times": 0},
                                               {"match": CLAIM, "status": 500, "times": 1}]}}
    said = (f"faults.failCreates[2] ('persistentvolumeclaims/-0002', status 500) is never answered: entry 1 "
            f"({earlier!r}, times: 0) comes first and answers every call it matches; give entry 1 a times to plant a "
            f"sequence, or remove entry 2")
    _refused(doc, "failCreates", said, tmp_path, capsys)


@pytest.mark.parametrize("earlier, later", [
    ("persistentvolumeclaims/-0002", "persistentvolumeclaims/"),  # the later one matches other claims too
    ("persistentvolumeclaims/", "-0002"),  # ... other resources' objects
    ("persistentvolumeclaims/-0002", "-0002"),
    ("jobs/", "persistentvolumeclaims/-0002"),
    ("persistentvolumeclaims/-0003", "persistentvolumeclaims/-0002"),
    ("persistentvolumeclaims/-12", "persistentvolumeclaims/2"),
])
def test_an_entry_an_earlier_times_0_one_leaves_calls_to_is_taken(earlier: str, later: str) -> None:
    faults = parse({"faults": {"failDeletes": [{"match": earlier, "status": 429, "times": 0},
                                               {"match": later, "status": 500, "times": 1}]}}, extra=["failDeletes"])
    assert [e.match for e in faults.fail_deletes] == [earlier, later]


def _refused(doc: dict, faults: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`doc` is refused saying `said`, by faults.parse and by podtax-kubesim at start (one line, no traceback)."""
    with pytest.raises(ValueError) as err:
        parse(doc, extra=[faults])
    assert str(err.value) == said
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(doc))
    code = main(["--cluster", str(path), "--kubeconfig", str(tmp_path / "kubeconfig"), "--port", "0"])
    err_text = capsys.readouterr().err
    assert code in (1, 2) and said in err_text and "Traceback" not in err_text, (code, err_text)
