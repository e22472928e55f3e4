"""`podtax report C --html FILE --simulate WORKLOAD`: the placement policies' evaluation (the scheduler's
simulation, run as its own command against the real analyzer app) becomes a section of the HTML file."""

from __future__ import annotations

import re

from podtax.cli.main import main

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
