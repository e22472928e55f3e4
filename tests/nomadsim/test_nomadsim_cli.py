"""`python -m podtax_nomadsim`: usage errors, the SIMULATED start-up line, SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from podtax_nomadsim.__main__ import main


def test_usage_error_is_one_line_exit_2(capsys) -> None:
    try:
        code = main(["--port", "many"])
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--port" in err and "Traceback" not in err
    assert main(["--refuse-creates-after", "-1"]) == 2


@pytest.mark.parametrize(("text", "says"), [
    ("plugins:\n  - provider: x\n", "plugins[0].id"),
    ("plugins: [a, b\n", "is not valid YAML (line 2)"),  # a traceback before
    ("plugins: []\nname: 2024-13-01\n", "bad.yaml: month must be in 1..12"),  # 'a number too long' (r4, s54)
    ("", "must be a mapping"),
    (None, "No such file"),
    ("/", "Is a directory"),
    # taken without a word before (sweep hU): a misspelt `plugin:` served the default plugin, and YAML kept the last
    # of a key given twice
    ("plugin:\n  - id: x\n", "bad.yaml: unknown key(s) plugin; a cluster file has region, datacenter, namespaces, "
                                "acl, seed, plugins, faults"),
    ("region: a\nplugins: []\nregion: b\n", "bad.yaml: line 3: key 'region' appears twice in the same mapping "
                                            "(first on line 1); keep one of them"),
    ("plugins:\n  - id: a\n    id: b\n", "bad.yaml: line 3: key 'id' appears twice"),
])
def test_bad_cluster_file_is_a_usage_mistake(tmp_path: Path, capsys, text: str | None, says: str) -> None:
    """Exit 2 and one line before anything starts, as podtax-kubesim's --cluster (it was exit 1 from the server)."""
    cluster = tmp_path / "bad.yaml"
    if text == "/":
        cluster.mkdir()
    elif text is not None:
        cluster.write_text(text)
    assert main(["--cluster", str(cluster)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and says in err and "Traceback" not in err


def test_serves_until_sigterm(tmp_path: Path) -> None:
    cluster = tmp_path / "nomad.yaml"
    cluster.write_text("plugins:\n  - id: hostpath\n")
    proc = subprocess.Popen([sys.executable, "-m", "podtax_nomadsim", "--cluster", str(cluster),
                             "--acl-token", "t"], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "SIMULATED Nomad API at http://127.0.0.1:" in line
        url = line.split(" at ")[1].split()[0]
        r = httpx.get(f"{url}/v1/plugin/csi/hostpath", headers={"X-Nomad-Token": "t"})
        assert r.status_code == 200 and r.headers["X-Podtax-Simulated"] == "true"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sigterm_right_after_the_line_and_again_while_it_stops_is_status_0(tmp_path: Path) -> None:
    """It printed its line before its SIGTERM handler was in place: a SIGTERM right after the line killed it (status
    -15, 10 runs of 10, session 53, fx10); and a second SIGTERM while it stopped (a supervisor stopping the whole
    process group, or twice) found SIGTERM at its default once asyncio.run had closed its loop, as podtax-kubesim's
    (review r9). Now the handler comes first and a second one is ignored. Several pauses: when it lands varies."""
    results = []
    for pause in (0.0, 0.005, 0.01, 0.02, 0.05, 0.1):
        proc = subprocess.Popen([sys.executable, "-m", "podtax_nomadsim", "--port", "0"], cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert "SIMULATED Nomad API at" in proc.stdout.readline()
            proc.send_signal(signal.SIGTERM)
            time.sleep(pause)  # not timed: only where the second signal lands
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        results.append((proc.returncode, out, err))
    assert results == [(0, "", "")] * len(results)
