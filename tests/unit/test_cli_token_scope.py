"""The analyzer's token that `podtax up` generated (its token file, named in up.json) is sent only to that
analyzer: the CLI sent it to whatever `--api` or PODTAX_API_URL named, so `podtax report --api http://another-host`
(PODTAX_API_URL=http://another-host: the same) gave the local analyzer's token to another server (audit hS).
PODTAX_API_TOKEN, set by the user, still goes to the analyzer they name. A real HTTP server recording the header;
the installed `podtax` entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from podtax.cli.common import same_analyzer

from tests.unit.fake_http import Answer, answering

PODTAX = str(Path(sys.executable).with_name("podtax"))
TOKEN = "local-analyzer-token-0123456789"


def _results(tmp_path: Path, up_api: str, api: str, **env: str) -> None:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "token").write_text(TOKEN + "\n")
    (data / "up.json").write_text(json.dumps({"api_url": up_api, "api_token_file": str(data / "token")}))
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    proc = subprocess.run([PODTAX, "results"], capture_output=True, text=True, timeout=60,
                          env={**clean, "PODTAX_DATA_DIR": str(data), "PODTAX_API_URL": api, **env})
    assert proc.returncode == 0, proc.stderr


def test_up_s_token_goes_to_up_s_analyzer_only(tmp_path: Path) -> None:
    with answering(b"[]") as url:
        _results(tmp_path, "http://127.0.0.1:1", url)  # another analyzer than podtax up's
        _results(tmp_path, url, url + "/")  # podtax up's (a trailing slash is the same address)
    assert Answer.seen == [None, f"Bearer {TOKEN}"]


def test_a_token_the_user_sets_goes_where_they_say(tmp_path: Path) -> None:
    with answering(b"[]") as url:
        _results(tmp_path, "http://127.0.0.1:1", url, PODTAX_API_TOKEN="users-own-token-0123456789")
    assert Answer.seen == ["Bearer users-own-token-0123456789"]


def test_up_s_token_goes_to_its_analyzer_by_any_loopback_name(tmp_path: Path) -> None:
    """localhost and 127.0.0.1 at the same port are the same analyzer of this machine: the token was sent only
    when the address was spelled as in up.json (writes and token-only reads then answered 401)."""
    with answering(b"[]") as url:
        port = int(url.rsplit(":", 1)[1])
        _results(tmp_path, f"http://localhost:{port}", url)
        _results(tmp_path, url, f"http://localhost:{port}/")
        _results(tmp_path, f"http://localhost:{port + 1}", url)  # another port: another server
    assert Answer.seen == [f"Bearer {TOKEN}", f"Bearer {TOKEN}", None]


def test_another_host_or_scheme_is_another_analyzer() -> None:
    up = "http://127.0.0.1:8700"
    assert same_analyzer("http://[::1]:8700", up)
    assert not same_analyzer("http://analyzer.example:8700", up)
    assert not same_analyzer("http://192.0.2.1:8700", up)
    assert not same_analyzer("https://localhost:8700", up)
    assert not same_analyzer("http://localhost:99999", up)  # not a port: never the same
