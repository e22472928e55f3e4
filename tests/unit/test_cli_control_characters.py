"""A value typed with a control character (a path from `$(cmd)` keeping its newline, a name holding an escape
sequence): the error naming it was several lines (the newline printed as it is) and an escape sequence in it reached
the terminal. Every error now names such a character as Python writes it (`\\n`, `\\x1b`), on one line (usage sweep
hE, through the real entry point)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.cli.main import main

HEADER = "file,node,env,test,params,started_at,tool_version\n"

CASES = {  # id: (argv, the one line's start); "{tmp}": the test's folder
    "import manifest": (["import", "a\nb.csv", "--campaign", "c"], "error: cannot read a\\nb.csv: a\\nb.csv:"),
    "import dry run": (["import", "a\rb.csv", "--campaign", "c", "--dry-run"], "error: cannot read a\\rb.csv:"),
    "import --root": (["import", "{tmp}/m.csv", "--campaign", "c", "--root", "no\nfolder"],
                      "error: --root no\\nfolder: not a folder"),
    "report --db": (["report", "c", "--db", "x\n.duckdb"], "error: --db x\\n.duckdb: no such file"),
    "report --db escape": (["report", "c", "--db", "\x1b[2Jx.duckdb"], "error: --db \\x1b[2Jx.duckdb: no such file"),
    # U+2028 / U+2029 end a line for Python's splitlines, editors and some log viewers (review r5, L4)
    "report --db line separator": (["report", "c", "--db", "x\u2028.duckdb"], "error: --db x\\u2028.duckdb: no such"),
    "campaign submit paragraph separator": (["campaign", "submit", "c\u2029.yaml"],
                                            "error: cannot read campaign file c\\u2029.yaml"),
    "report --simulate": (["report", "c", "--html", "{tmp}/r.html", "--simulate", "w\n.yaml"],
                          "error: --simulate w\\n.yaml: no such file"),
    "campaign submit": (["campaign", "submit", "c\n.yaml"], "error: cannot read campaign file c\\n.yaml"),
    "export into a missing folder": (["export", "c", "--csv", "no\nfolder/out"],
                                     "error: cannot write no\\nfolder/out: the folder no\\nfolder does not exist"),
    "parse": (["parse", "a\nb.log"], "podtax parse: 'a\\nb.log': no such file"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_control_character_in_a_value_stays_on_the_one_line(case: str, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PODTAX_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("PODTAX_API_URL", "http://127.0.0.1:9")
    (tmp_path / "m.csv").write_text(HEADER)
    argv, start = CASES[case]
    assert main([a.replace("{tmp}", str(tmp_path)) for a in argv]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert err.startswith(start), err
    assert "\x1b" not in err


NUL = {  # id: (argv, the one line's start): os calls raised ValueError 'embedded null byte', a traceback
    "parse": (["parse", "a\0b.log"], "podtax parse: 'a\\x00b.log': holds a NUL character, which no file name can"),
    "import": (["import", "a\0b.csv", "--campaign", "c"], "podtax import: invalid value for 'manifest': 'a\\x00b.csv' "
               "holds a NUL character, which no path can"),
    "report --db": (["report", "c", "--db", "a\0b"], "podtax report: invalid value for '--db': 'a\\x00b' holds a NUL"),
    "report --html": (["report", "c", "--html", "a\0b"], "podtax report: invalid value for '--html': 'a\\x00b'"),
    "export --csv": (["export", "c", "--csv", "a\0b"], "podtax export: invalid value for '--csv': 'a\\x00b'"),
    "campaign submit": (["campaign", "submit", "a\0b"], "podtax campaign submit: invalid value for 'file': 'a\\x00b'"),
}


@pytest.mark.parametrize("case", sorted(NUL))
def test_a_nul_in_a_path_is_a_usage_mistake(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A NUL reaches main(argv) only from Python (execve refuses one in an argument), but it was a traceback."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PODTAX_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("PODTAX_API_URL", "http://127.0.0.1:9")
    argv, start = NUL[case]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert err.startswith(start), err


def test_both_one_line_functions_write_every_line_ending_escaped() -> None:
    """podtax's and kubesim's one_line (kubesim does not import podtax): no character any reader ends a line at."""
    from podtax.oneline_args import one_line
    from podtax_kubesim.oneline_args import one_line as kubesim_one_line

    text = "a\nb\rc\x0bd\x0ce\x1cf\x1dg\x1eh\x85i\u2028j\u2029k\x1b[2J"
    for escape in (one_line, kubesim_one_line):
        assert escape(text) == "a\\nb\\rc\\x0bd\\x0ce\\x1cf\\x1dg\\x1eh\\x85i\\u2028j\\u2029k\\x1b[2J"
        assert len(escape(text).splitlines()) == 1
