"""imports_twice.find lists every stored imported run that is another's capture (same campaign, env, test, params,
node in any case, start, and log text with CRLF as LF), keeping the first by the rule (lowercase node, then received
first, then least run id). It windows on the texts only over the rows whose key and text hashes another row shares;
this checks it against the rule written plainly in Python, on random imported raw logs in a real DuckDB file: exact
copies, CRLF copies, a lone CR, a trailing newline added, node spellings, other params/tests/starts, stderr copies."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from podtax.capture_text import capture_text
from podtax_analyzer.imports_twice import find
from podtax_analyzer.store import Store

START = datetime(2024, 3, 1, tzinfo=UTC)
_INSERT = """INSERT INTO raw_logs VALUES (?, ?, ?, 'local', ?, ?, ?, '{}', ?, 1, ?, ?, 0, ?, ?, NULL, false, false,
    '{}', ?, ?)"""


def _rows(rng: random.Random, n: int) -> list[dict]:
    """`n` imported raw logs, many of them a variant of an earlier one."""
    rows: list[dict] = []
    for i in range(n):
        if rows and rng.random() < 0.7:
            row = dict(rng.choice(rows))
            change = rng.choice(["copy", "crlf", "crlf", "lone-cr", "newline", "node", "params", "test", "start",
                                 "stderr", "campaign"])
            if change == "crlf":
                row["stdout"] = row["stdout"].replace("\r\n", "\n").replace("\n", "\r\n")
            elif change == "lone-cr":
                row["stdout"] = row["stdout"].replace("\n", "\r", 1)
            elif change == "newline":
                row["stdout"] += "\n"
            elif change == "node":
                row["node"] = rng.choice(["node-1", "Node-1", "NODE-1"])
            elif change == "params":
                row["params_key"] = rng.choice(["threads=1", "threads=2"])
            elif change == "test":
                row["test"] = rng.choice(["sysbench-cpu", "sysbench-memory"])
            elif change == "start":
                row["started_at"] = START + timedelta(seconds=rng.choice([0, 1]))
            elif change == "stderr":
                row["stderr"] = rng.choice(["", "warn\r\n", "warn\n"])
            elif change == "campaign":
                row["campaign"] = rng.choice(["a", "b"])
        else:
            row = {"campaign": "a", "node": "node-1", "env": rng.choice(["host", "kubernetes"]),
                   "test": "sysbench-cpu", "params_key": "threads=1", "started_at": START,
                   "stdout": f"events per second: {rng.randint(1, 40)}\ntotal time: 1.0s\n", "stderr": ""}
        row.update(run_id=f"import-{i:04d}", imported_from=f"f{i}.log",
                   received_at=START + timedelta(minutes=rng.randint(0, 5)))
        rows.append(row)
    return rows


def _by_the_rule(rows: list[dict], campaign: str | None) -> list[tuple[str, str]]:
    """(run_id, kept_run_id) of every copy, the rule in plain Python."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if campaign is None or r["campaign"] == campaign:
            key = (r["campaign"], r["env"], r["test"], r["params_key"], r["node"].lower(), r["started_at"],
                   capture_text(r["stdout"]), capture_text(r["stderr"]))
            groups.setdefault(key, []).append(r)
    pairs = []
    for group in groups.values():
        kept = min(group, key=lambda r: (r["node"] != r["node"].lower(), r["received_at"], r["run_id"]))
        pairs += [(r["run_id"], kept["run_id"]) for r in group if r is not kept]
    return sorted(pairs)


def test_find_lists_exactly_the_copies_the_rule_names(tmp_path: Path) -> None:
    rng = random.Random(53)
    store = Store(tmp_path / "twice.duckdb")
    try:
        con = store.con
        for trial in range(20):
            rows = _rows(rng, 60)
            con.execute("DELETE FROM raw_logs")
            con.executemany(_INSERT, [[r["run_id"], f"e{r['run_id']}", r["campaign"], r["node"], r["env"], r["test"],
                                       r["params_key"], r["started_at"], r["started_at"], r["stdout"], r["stderr"],
                                       r["imported_from"], r["received_at"]] for r in rows])
            for campaign in (None, "a", "b"):
                found = sorted((t["run_id"], t["kept_run_id"]) for t in find(con, campaign))
                assert found == _by_the_rule(rows, campaign), (trial, campaign)
    finally:
        store.close()
