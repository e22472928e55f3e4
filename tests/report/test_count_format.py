"""A count's medians and values are printed as counts (audit hB2): retransmits read "host median 5.500 count",
"pod median 22.00 count" and an outlier "(11.00 count)" in the sentence, the flag, the terminal report and the
HTML, as if measured to four digits. Now 5.5, 22 and 25 here; the JSON's numbers are unchanged. Real result events
in a real DuckDB file, the real analyzer and the CLI's main()."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from podtax import events
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import serve

T0 = datetime(2026, 11, 9, 8, tzinfo=UTC)
HOST = [5.0, 7, 3, 6, 25, 4, 5, 8, 6, 4, 7, 5]  # median 5.5 (an even number of runs), 25 an outlier (17: z 5.2 < 6)
POD = [22.0, 20, 23, 21, 22, 24, 21, 22, 23, 22, 21, 22]  # median 22


def _run(env: str, i: int, value: float, slot: int) -> events.Envelope:
    run = events.RunSpec(run_id=f"cnt-{env}-{i}", campaign="cnt", node="node-1", env=env, test="iperf3",
                         params={"protocol": "tcp", "duration": 2}, cluster="local", attempt=1, timeout_s=600)
    start = T0 + timedelta(minutes=10 * i + 5 * slot)
    res = events.Result(run=run, tool="iperf3", tool_version="3.12", parser_version="1",
                        metrics=[events.Metric(name="retransmits", value=value, unit="count", higher_is_better=False)],
                        started_at=start, ended_at=start + timedelta(seconds=2))
    return events.result(res, "test")


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("counts") / "podtax.duckdb"
    store = Store(path)
    store.write_batch([_run("host", i, v, 0) for i, v in enumerate(HOST)]
                      + [_run("kubernetes", i, v, 1) for i, v in enumerate(POD)])
    store.close()
    return path


def test_a_count_reads_as_a_count_in_the_sentence_table_and_html(db, capsys, tmp_path):
    assert main(["report", "cnt", "--db", str(db), "--json"]) == 0
    (cell,) = json.loads(capsys.readouterr().out)["cells"]
    assert (cell["host_median"], cell["pod_median"]) == (5.5, 22.0)  # the numbers themselves unchanged
    assert "host median 5.5 count over 12 runs, pod median 22 count over 12 runs" in cell["sentence"], cell
    assert "(25 count)" in cell["flag_details"]["OUTLIERS"], cell["flag_details"]
    assert main(["report", "cnt", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "(25 count)" in out and "25.00" not in out and "5.500" not in out, out
    store = Store(db)
    try:
        with serve(create_app(store)) as url:
            assert main(["report", "cnt", "--api", url, "--html", str(tmp_path / "r.html")]) == 0
    finally:
        store.close()
    html = (tmp_path / "r.html").read_text()
    assert "host median 5.5, pod median 22 count" in html, html[html.index("cell-"):][:3000]
    assert "5.500" not in html and "22.00 " not in html and "25.00" not in html


def test_a_measurement_keeps_its_four_digits():
    from podtax_analyzer.wording import fmt_value
    assert (fmt_value(5.5), fmt_value(22.0), fmt_value(5.5, "count"), fmt_value(22.0, "requests")) == \
        ("5.500", "22.00", "5.5", "22")
    assert fmt_value(3.25, "count") == "3.250"  # not a median of whole counts (a mean per object): four digits
