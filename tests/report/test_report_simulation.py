"""`podtax report C --html FILE --simulate WORKLOAD`: the placement policies' evaluation (the scheduler's
simulation, run as its own command against the real analyzer app) becomes a section of the HTML file."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from podtax.cli.main import main

PODTAX = str(Path(sys.executable).with_name("podtax"))

WORKLOAD = """
nodes: {cpu: "4", memory: 16Gi}
duration_s: 300
classes:
  - test: fio
    params: rw=randread
    rate_per_s: 0.1
    runtime_s: 30
    requests: {cpu: "1", memory: 1Gi}
"""


def test_html_report_gains_the_simulation_table(served, tmp_path):
    workload = tmp_path / "workload.yaml"
    workload.write_text(WORKLOAD)
    out = tmp_path / "base.html"
    assert main(["report", "base", "--html", str(out), "--simulate", str(workload), "--seeds", "3",
                 "--api", served.url]) == 0
    page = out.read_text()
    section = page[page.index('<section id="simulation">'):]
    assert section.index("</section>") < section.index("</body>")  # inside the page, before its end
    rows = dict(re.findall(r'<tr><th scope="row">([a-z]+)</th>(.*?)</tr>', section))
    assert set(rows) == {"default", "random", "prototype", "podtax", "oracle"}
    for cells in rows.values():  # every figure with its interval: mid [low, high], low <= mid <= high
        for mid, low, high in re.findall(r'<td class="num">([\d,.]+) <span class="ci">\[([\d,.]+), ([\d,.]+)\]',
                                         cells)[:1]:
            assert float(low.replace(",", "")) <= float(mid.replace(",", "")) <= float(high.replace(",", ""))
    assert "over 3 seeds" in section


def test_simulate_without_html_is_a_usage_error(served, tmp_path, capsys):
    assert main(["report", "base", "--simulate", str(tmp_path / "w.yaml"), "--api", served.url]) == 2
    assert "give --html FILE too" in capsys.readouterr().err


def test_a_bad_workload_is_one_clear_line(served, tmp_path, capsys):
    """A workload that does not validate is a usage mistake, as in `podtax simulate`: exit 2 (it was 1, and the line
    read 'error: --simulate: error: the workload ...')."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("classes: []\n")
    assert main(["report", "base", "--html", str(tmp_path / "x.html"), "--simulate", str(bad),
                 "--api", served.url]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --simulate: the workload ") and "workload" in err[0], err
    assert not (tmp_path / "x.html").exists()


BAD_WORKLOADS = [
    # name, content, what the one line says
    ("garbage.bin", b"\xa4\x00\xff", "the workload garbage.bin is not UTF-8 text (byte 0)"),
    ("tabs.yaml", b"duration_s: 300\nclasses:\n\t- test: fio\n", "YAML does not allow tabs for indentation"),
    ("list.yaml", b"- 1\n- 2\n", "the workload list.yaml is not a YAML mapping"),
    ("invalid.yaml", b"classes: []\n", "the workload invalid.yaml is invalid: "),
]


@pytest.mark.parametrize(("name", "content", "said"), BAD_WORKLOADS, ids=[w[0] for w in BAD_WORKLOADS])
def test_a_bad_workload_is_said_before_the_analyzer_is_asked(tmp_path: Path, name: str, content: bytes,
                                                              said: str) -> None:
    """With the analyzer down, a workload file that does not validate was reported as "cannot reach the analyzer",
    exit 1: the page was asked for before the simulation read its file (sweep hU). Through the `podtax` script."""
    (tmp_path / name).write_bytes(content)
    env = {**os.environ, "PODTAX_API_URL": "http://127.0.0.1:9"}
    done = subprocess.run([PODTAX, "report", "base", "--html", "x.html", "--simulate", name], cwd=tmp_path, env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --simulate: ") and said in lines[0], done.stderr
    assert "analyzer" not in done.stderr
    assert not (tmp_path / "x.html").exists()


def test_the_analyzer_down_is_still_said_with_a_good_workload(tmp_path: Path) -> None:
    (tmp_path / "w.yaml").write_text(WORKLOAD)
    env = {**os.environ, "PODTAX_API_URL": "http://127.0.0.1:9"}
    done = subprocess.run([PODTAX, "report", "base", "--html", "x.html", "--simulate", "w.yaml"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "cannot reach the analyzer" in lines[0], done.stderr
    assert not (tmp_path / "x.html").exists()


def test_an_unknown_campaign_is_said_as_without_simulate(served, tmp_path: Path, capsys) -> None:
    """With --simulate, an unknown campaign was the simulation child's line, naming an internal API path ('GET
    /api/campaigns/nosuch/comparisons: 404 ...'; review rU2): now the analyzer's own, as without --simulate."""
    (tmp_path / "w.yaml").write_text(WORKLOAD)
    said = []
    for extra in ([], ["--simulate", str(tmp_path / "w.yaml")]):
        assert main(["report", "nosuch", "--html", str(tmp_path / "x.html"), *extra, "--api", served.url]) == 1
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1, err
        said.append(err[0])
    assert said[1] == said[0] and said[0].startswith("error: unknown campaign 'nosuch'"), said
    assert not (tmp_path / "x.html").exists()
