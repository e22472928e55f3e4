"""`podtax-analyzer report --db FILE CAMPAIGN`: the comparison of a campaign from a DuckDB file,
as JSON on stdout, without a running analyzer. `podtax report --db` runs this command (as a
separate process: the podtax library never imports a service). Exit 0, or 1 with one line on
stderr saying what to fix (a file of an older podtax version: start this version's analyzer on it once), 2
for a usage mistake (a --db file that is no DuckDB database, or one whose tables are not the analyzer's)."""

from __future__ import annotations

import json
import sys

import duckdb
from podtax.cli.common import not_a_database
from podtax.oneline_args import OneLineParser, a_path

from podtax_analyzer import duckcon
from podtax_analyzer.comparisons import UnknownCampaign, compare_campaign
from podtax_analyzer.db_file import foreign_why, version_why, wal_why
from podtax_analyzer.phase_table import phase_table, pooled_objects
from podtax_analyzer.provision_starts import provision_starts


def main(argv: list[str]) -> int:
    ap = OneLineParser(prog="podtax-analyzer report", description=__doc__.splitlines()[0])
    ap.add_argument("campaign")
    ap.add_argument("--db", required=True, type=a_path, help="the analyzer's DuckDB file")
    ap.add_argument("--threshold", type=float, default=0.01, help="practical threshold as a fraction (0.01 = 1%%)")
    ap.add_argument("--correction", choices=("holm", "bh"), default="holm")
    ap.add_argument("--phases", action="store_true", help="the control-plane phase table instead")
    args = ap.parse_args(argv)
    if not 0 <= args.threshold < 1:  # as the API's: nan or 5 gave a table of meaningless verdicts
        ap.error(f"argument --threshold: {args.threshold:g} is no practical threshold: give a fraction from 0 to "
                 "below 1 (0.01 = 1%)")
    if problem := not_a_database(args.db):  # DuckDB's words, exit 1 and advice about a running analyzer before
        ap.error(f"argument --db: {args.db} {problem}")
    try:
        con = duckcon.connect(args.db, read_only=True)
    except duckdb.Error as exc:
        print(f"cannot open {args.db}: {cannot_read(exc)}", file=sys.stderr)
        return 1
    try:
        report = compare_campaign(con, args.campaign, threshold=args.threshold, correction=args.correction)
        if args.phases:
            report = phase_table(report, pooled_objects(con, args.campaign), provision_starts(con, args.campaign))
    except UnknownCampaign:
        print(f"unknown campaign {args.campaign!r} (no run of it in {args.db})", file=sys.stderr)
        return 1
    except duckdb.Error as exc:
        if not (why := foreign_why(exc, con)):
            raise
        print(f"--db {args.db}: {why[0]}", file=sys.stderr)
        return why[1]  # 2: a usage mistake (another program's file), as a file that is no DuckDB database
    finally:
        con.close()
    json.dump(report.model_dump(mode="json"), sys.stdout)
    return 0


def cannot_read(exc: duckdb.Error) -> str:
    """Why DuckDB refused the file, in one line (its text may span several: the CLI showed the last one only)."""
    text = str(exc)
    if version := version_why(text):
        return version
    if wal := wal_why(text):
        return wal
    if "Could not read enough bytes" in text or "Corrupt database file" in text:
        return "the file is damaged (cut short or overwritten): restore it from a backup"
    first = (text.splitlines() or [type(exc).__name__])[0][:300]
    if "lock" in text.lower():
        return f"{first}; if the analyzer is running it holds the file: ask its HTTP API (drop --db)"
    return first
