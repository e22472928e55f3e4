"""One stress-ng run whose second stressor was skipped or did no work, parsed from its metrics table and from its
--yaml report, gives the same metric names (sweep hB3: real captures, stress-ng 0.15.06 on this project's Debian 12
VM, tests/corpus/debian12-x86_64, commands in COMMANDS.tsv). The YAML report tells no skip and no dispatch: a skipped
stressor is absent from it (apparmor; uprobe under --metrics-brief) or a row of 0 bogo ops (uprobe under --metrics).
Before, the table named cpu's figures `cpu_...` (a run of several stressors) where the YAML named them unprefixed
(apparmor, uprobe under --metrics-brief), and the YAML gave the skipped uprobe's zeros (uprobe_bogo_ops 0,
uprobe_cpu_used_per_instance 9.18) as figures. Now the table is named as the YAML can name it (several rows printed,
or a dispatched stressor without a row but a skipped one under --metrics-brief: prefixed), and a row of 0 bogo ops
gives no figure in either form (NO_WORK), as a skipped one's."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import parse_text

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "debian12-x86_64"
# --metrics-brief prints no `CPU used per instance` and `RSS Max` columns; the YAML report always holds them
BRIEF_ONLY_IN_YAML = {"cpu_used_per_instance", "rss_max"}


@pytest.mark.parametrize(("name", "brief", "prefix"), [("stress-ng-cpu-apparmor-skipped-brief", True, ""),
                                                       ("stress-ng-cpu-apparmor-skipped-metrics", False, ""),
                                                       ("stress-ng-cpu-uprobe-skipped-brief", True, ""),
                                                       ("stress-ng-cpu-uprobe-skipped-metrics", False, "cpu_"),
                                                       ("stress-ng-cpu-af-alg-idle-metrics", False, "cpu_")])
@pytest.mark.parametrize("tool", [None, "stress-ng", "stress-ng-cpu"])
def test_table_and_yaml_of_a_partly_skipped_run_name_the_same_metrics(name: str, brief: bool, prefix: str,
                                                                       tool: str | None) -> None:
    table = parse_text((CORPUS / f"{name}.log").read_text(encoding="utf-8"), tool)
    yaml = parse_text((CORPUS / f"{name}.yaml").read_text(encoding="utf-8"), tool)
    named = prefix if tool != "stress-ng-cpu" else ""  # the cpu test names cpu's row unprefixed in both forms
    assert set(table.values()) == set(yaml.values()) - {named + k for k in (BRIEF_ONLY_IN_YAML if brief else ())}
    key = f"{named}bogo_ops"
    assert table.values()[key] == yaml.values()[key] > 0  # cpu's
    assert [k for k in yaml.values() if k.startswith(("uprobe", "apparmor", "af_alg"))] == []  # no skipped/idle row


def test_the_skipped_row_of_the_yaml_report_is_flagged_not_read() -> None:
    yaml = parse_text((CORPUS / "stress-ng-cpu-uprobe-skipped-metrics.yaml").read_text(encoding="utf-8"))
    assert "NO_WORK: stress-ng's uprobe stressor completed 0 bogo ops; no figure of it is read" in yaml.flags
    table = parse_text((CORPUS / "stress-ng-cpu-uprobe-skipped-metrics.log").read_text(encoding="utf-8"))
    assert any(f.startswith("SKIPPED: stress-ng skipped the uprobe stressor") for f in table.flags)
