"""A number written as text in a campaign file ('120' for 120) is refused with one line naming the key and the
fix, through `podtax campaign submit --dry-run`; pydantic's lax mode used to read it as the number. An import
manifest's params are text by nature (`poll_interval_s=0.5`): they still validate, as does a parameter whose
type is text (a Kubernetes quantity `cpu: "1"`, a size `4K`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax import campaign
from podtax.cli import importer
from podtax.cli.main import main

QUICK = (Path(__file__).parents[2] / "examples" / "campaigns" / "quick.yaml").read_text()

QUOTED = [  # id, (text replaced, by), where the one line points, the number
    ("timeout", ("timeout: 120", "timeout: '120'"), "c.yaml:13: timeout", "120"),
    ("timeout as a float", ("timeout: 120", 'timeout: "90.5"'), "c.yaml:13: timeout", "90.5"),
    ("matrix threads", ("threads: [1, all]", "threads: ['2', all]"), "c.yaml:8: tests.0.matrix.threads", "2"),
    ("params", ("max_prime: 20000", "max_prime: '20000'"), "c.yaml:7: tests.0.params.max_prime", "20000"),
    ("repetitions", ("{min: 6, max: 6}", "{min: '6', max: 6}"), "c.yaml:9: repetitions.min", "6"),
    ("target CI width", ("{min: 6, max: 6}", "{min: 6, max: 6, target_ci_width: '0.05'}"),
     "c.yaml:9: repetitions.target_ci_width", "0.05"),
    ("seed", ("timeout: 120", "timeout: 120\nseed: '7'"), "c.yaml:14: seed", "7"),
]


@pytest.fixture(autouse=True)
def _dead_nats(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", "nats://127.0.0.1:9")  # refused before NATS is asked
    monkeypatch.setenv("PODTAX_CLI_TIMEOUT", "2")
    monkeypatch.setenv("PODTAX_DATA_DIR", str(tmp_path))


@pytest.mark.parametrize(("change", "where", "number"), [q[1:] for q in QUOTED], ids=[q[0] for q in QUOTED])
def test_a_quoted_number_in_a_campaign_file_is_refused(change: tuple[str, str], where: str, number: str,
                                                       tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert change[0] in QUICK
    path = tmp_path / "c.yaml"
    path.write_text(QUICK.replace(change[0], change[1]))
    assert main(["campaign", "submit", "--dry-run", str(path)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    said = f"{where}: '{number}' is quoted, so it is text: write {number}, not '{number}'"
    assert len(lines) == 1 and lines[0].endswith(f"{said}; nothing was submitted"), lines


ACCEPTED = [  # id, (text replaced, by): numbers as numbers, and text where the field is text
    ("the example as it is", ("", "")),
    ("a quantity quoted", ('cpu: "1"', "cpu: '1'")),
    ("threads all", ("threads: [1, all]", "threads: [all]")),
    ("a float", ("timeout: 120", "timeout: 90.5")),
]


@pytest.mark.parametrize("change", [a[1] for a in ACCEPTED], ids=[a[0] for a in ACCEPTED])
def test_numbers_and_text_fields_still_pass(change: tuple[str, str]) -> None:
    assert change[0] in QUICK
    campaign.parse(QUICK.replace(*change), "c.yaml")


def test_an_import_manifest_keeps_numbers_as_text(tmp_path: Path) -> None:
    """The manifest's params are text: `poll_interval_s=0.5` stays the string '0.5' and validates."""
    (tmp_path / "t.log").write_text("{}")  # read_manifest only checks the file is there
    manifest = tmp_path / "m.csv"
    manifest.write_text(",".join(importer.HEADER) + "\n"
                        "t.log,node-1,kubernetes,volume-churn,count=5 poll_interval_s=0.5,2024-03-01T10:00:00Z,\n")
    [row] = importer.read_manifest(manifest)
    assert row.params == {"count": 5, "poll_interval_s": "0.5"}
