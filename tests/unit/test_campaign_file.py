"""Campaign files: validated by pydantic, errors name the field and the line."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax import campaign

EXAMPLES = sorted((Path(__file__).parents[2] / "examples" / "campaigns").glob("*.yaml"))

GOOD = """\
name: ok
nodes: [a, b]
tests:
  - test: sysbench-cpu
    matrix: {threads: [1, all]}
"""


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_examples_are_valid(path: Path) -> None:
    c = campaign.load(path)
    assert c.tests


def test_defaults() -> None:
    c = campaign.parse(GOOD)
    assert c.environments == ["host", "kubernetes"]
    assert c.repetitions.min == 6 and c.spacing_s() == 0
    assert c.tests[0].combinations() == [{"threads": 1}, {"threads": "all"}]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: x\nnodes: [a]\ntests:\n  - test: sysbench-cpu\n    params: {threads: 0}\n",
         "campaign.yaml:5: tests.0.params.threads: threads must be between 1 and 1024"),
        ("name: x\nnodes: [a]\ntests:\n  - test: no-such-test\n", "unknown test 'no-such-test'"),
        ("name: x\nnodes: [a]\ntests:\n  - test: sysbench-cpu\nrepetitions: {min: 5, max: 2}\n",
         "campaign.yaml:5: repetitions: max (2) must be >= min (5)"),
        ("name: Bad_Name\nnodes: [a]\ntests: [{test: sysbench-cpu}]\n", "campaign.yaml:1: name:"),
        ("name: x\nnodes: []\ntests: [{test: sysbench-cpu}]\n", "campaign.yaml:2: nodes"),
        ("name: x\nnodes: [a]\ntests: [{test: sysbench-cpu}]\nspacing: soon\n", "campaign.yaml:4: spacing"),
        ("name: x\nnodes: [a]\ntests: [{test: sysbench-cpu}]\nenvironments: [host, docker]\n",
         "campaign.yaml:4: environments.1"),
        ("name: x\nnodes: [a]\ntests: [{test: sysbench-cpu}]\nrepititions: {min: 3}\n",
         "campaign.yaml:4: repititions: Extra inputs are not permitted"),
        ("name: x\nnodes: [a\n", "not valid YAML"),
        ("- just\n- a list\n", "a campaign is a YAML mapping"),
        ("name: x\nnodes: [a]\ntests: [{test: volume-churn}]\n", "control-plane benchmark"),
    ],
)
def test_errors_name_field_and_line(text: str, expected: str) -> None:
    with pytest.raises(campaign.CampaignError) as info:
        campaign.parse(text)
    assert expected in str(info.value) and "Value error" not in str(info.value)


def test_missing_file() -> None:
    with pytest.raises(campaign.CampaignError, match="cannot read campaign file"):
        campaign.load(Path("no/such/campaign.yaml"))
