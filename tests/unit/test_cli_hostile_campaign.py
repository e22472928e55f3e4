"""Damaged campaign files and campaign names through `podtax campaign ...` (the real entry point): refused
with exit 2 and a message naming the line, the field and the fix, before NATS is asked; never a traceback,
never a value dropped without a word, never long."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from podtax.cli.main import main

QUICK = (Path(__file__).parents[2] / "examples" / "campaigns" / "quick.yaml").read_text()
LAUGHS = "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}' if i else 'x'] * 10)}]\n" for i in range(10))

FILES = [  # id, campaign text, fragments the error must contain
    ("duplicate top-level key", QUICK + "name: other\n", ["c.yaml:14: key 'name' appears twice", "first on line 2",
                                                          "keep one"]),
    ("duplicate nested key", QUICK.replace("{min: 6, max: 6}", "{min: 6, max: 6, min: 8}"),
     ["c.yaml:9: key 'min' appears twice"]),
    ("empty matrix list", QUICK.replace("threads: [1, all]", "threads: []"),
     ["c.yaml:8: tests.0.matrix.threads: lists no values", "drop threads from the matrix"]),
    ("spacing past what a date holds", QUICK + "spacing: 99999999999999999999999h\n",
     ["c.yaml:14: spacing: 99999999999999999999999h is above the cap of 168h"]),
    ("spacing of 8 days", QUICK + "spacing: 192h\n", ["spacing: 192h is above the cap"]),
    ("NUL byte", QUICK + "\x00", ["c.yaml:14: not valid YAML: character U+0000 (control characters", "remove it"]),
    ("tab indentation", QUICK.replace("  - test", "\t- test"), ["c.yaml:6: not valid YAML", "use spaces"]),
    ("two documents", QUICK + "---\n" + QUICK, ["c.yaml:14: not valid YAML: expected a single document",
                                                "remove the `---` line"]),
    ("a number of 5,001 digits", QUICK.replace("timeout: 120", "timeout: 1" + "0" * 5000),
     ["c.yaml:13: a number of 5,001 digits (100000000000...): no field takes a number so long"]),
    ("an impossible date", QUICK.replace("name: quick", "name: 2024-13-01"),
     ["c.yaml: month must be in 1..12 (YAML reads an unquoted value of this form as a date or a number: quote it"]),
    ("billion laughs", LAUGHS + QUICK, ["c.yaml:1: a0: Extra inputs are not permitted"]),
    ("billion laughs with a repeated key", LAUGHS + QUICK.replace("timeout: 120", "timeout: 1\ntimeout: 2"),
     ["key 'timeout' appears twice"]),
    ("billion laughs with a number of 5,001 digits", LAUGHS + QUICK.replace("timeout: 120", "timeout: 1" + "0" * 5000),
     ["c.yaml:23: a number of 5,001 digits"]),
]


@pytest.fixture(autouse=True)
def _dead_nats(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A file that passed validation would go on to NATS: none there, and a short deadline."""
    monkeypatch.setenv("PODTAX_NATS_URL", "nats://127.0.0.1:9")
    monkeypatch.setenv("PODTAX_CLI_TIMEOUT", "2")
    monkeypatch.setenv("PODTAX_DATA_DIR", str(tmp_path))


@pytest.mark.parametrize(("text", "fragments"), [f[1:] for f in FILES], ids=[f[0] for f in FILES])
def test_a_damaged_campaign_file_is_refused_before_nats(text: str, fragments: list[str], tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    start = time.monotonic()
    assert main(["campaign", "submit", "--dry-run", str(path)]) == 2
    assert time.monotonic() - start < 10
    err = capsys.readouterr().err
    assert "Traceback" not in err and "cannot reach NATS" not in err
    first = err.splitlines()[0]
    for fragment in fragments:
        assert fragment in first, err
    assert err.strip().endswith("nothing was submitted")


def test_the_examples_and_merge_keys_are_not_duplicates() -> None:
    from podtax import campaign

    for path in sorted((Path(__file__).parents[2] / "examples" / "campaigns").glob("*.yaml")):
        campaign.load(path)
    merged = campaign.parse(QUICK.replace("repetitions: {min: 6, max: 6}", "repetitions:\n  <<: {min: 6, max: 8}\n"
                                          "  max: 6"))
    assert merged.repetitions.max == 6


NAMES = [  # argv, fragment of the one usage line
    (["campaign", "status", ""], "'' is not a campaign name"),
    (["campaign", "status", "a b*>"], "'a b*>' is not a campaign name"),
    (["campaign", "status", "camp\u00e4ign"], "is not a campaign name"),
    (["campaign", "status", "x\x1b[2J"], "'x\\x1b[2J' is not a campaign name"),
    (["campaign", "status", "a.b"], "'a.b' is not a campaign name"),
    (["campaign", "cancel", "*"], "'*' is not a campaign name"),
    (["campaign", "cancel", "ok", "--wait", "nan"], "'--wait': nan is not a number of seconds"),
    (["campaign", "cancel", "ok", "--wait", "-1"], "'--wait': -1.0 is not a number of seconds"),
    (["campaign", "status", "ok", "--follow", "--timeout", "inf"], "'--timeout': inf is not a number"),
]


@pytest.mark.parametrize(("argv", "fragment"), NAMES, ids=[" ".join(a[1:]) for a, _ in NAMES])
def test_a_name_nats_cannot_take_is_a_usage_error(argv: list[str], fragment: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], lines
    assert lines[0].startswith(f"podtax campaign {argv[1]}: invalid value for ")
