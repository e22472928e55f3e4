"""One stress-ng run parsed from its metrics table and from its --yaml report gives the same metrics: the same
names, units and directions, and the same values within the table's two decimals. stress-ng keys a YAML
miscellaneous metric by its description in lower case with every character but letters, digits and spaces
dropped (`MB/sec read rate` is `mbsec-read-rate`), so results compared by name must not see two metrics
where a campaign holds logs of both forms. Runs the installed stress-ng with small operation counts."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from podtax.parsers import parse_text

# one instance each: a YAML report gives a stressor's misc metrics of several instances as their arithmetic mean,
# named `..._mean_over_instances` (stressng_yaml), the table as another mean, so those are not the same metric
RUNS = [
    ["--hdd", "1", "--hdd-ops", "200", "--hdd-bytes", "1M"],  # `MB/sec read rate`: the name lost its `/`
    ["--pipe", "1", "--pipe-ops", "20000"],  # `MB per sec pipe write rate`: the unit lost its case
    ["--switch", "1", "--switch-ops", "20000"],  # `(pipe method)`: the unit lost its parentheses
    ["--memrate", "1", "--memrate-ops", "2", "--memrate-bytes", "1M"],
    ["--crypt", "1", "--crypt-ops", "50"],  # `SHA-1 encrypts per sec`: a method's name in the description
    ["--fp", "1", "--fp-ops", "50"],  # `Mfp-ops per sec, float64 add`
    ["--matrix", "1", "--matrix-ops", "200", "--pipe", "1", "--pipe-ops", "20000"],  # two stressors: prefixed
]


@pytest.mark.parametrize("options", RUNS, ids=lambda o: " ".join(o))
def test_table_and_yaml_of_one_run_give_the_same_metrics(options: list[str], tmp_path: Path) -> None:
    if shutil.which("stress-ng") is None:
        pytest.skip("stress-ng is not installed (apt-get install stress-ng)")
    argv = ["stress-ng", *options, "--metrics", "--yaml", "report.yaml", "--temp-path", str(tmp_path)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:])
    table = {m.name: m for m in parse_text(proc.stdout + proc.stderr).metrics}
    yaml = {m.name: m for m in parse_text((tmp_path / "report.yaml").read_text(encoding="utf-8")).metrics}
    assert sorted(table) == sorted(yaml)
    assert len(table) > 8  # the run printed misc metrics beside its row(s) of 8 columns
    for name, metric in table.items():
        assert (metric.unit, metric.higher_is_better) == (yaml[name].unit, yaml[name].higher_is_better), name
        assert abs(metric.value - yaml[name].value) <= 0.0051 + 1e-9, (name, metric.value, yaml[name].value)
