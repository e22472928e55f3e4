"""PODTAX_NATS_NKEY / PODTAX_NATS_CREDS naming a file that holds no usable key (a wrong file, a damaged copy, a
.creds without its JWT block). The settings checked only that the file exists: against a real nats-server that
asks for nkey authentication (its INFO carries a nonce), the service ended in nats-py's traceback
(nkeys.ErrInvalidSeed, TypeError "object of type 'NoneType' has no len()"), exit 1, and a .creds file without its
JWT block hung it for ever (nats-py reads lines past the end of the file looking for it). Now each is one line
naming the variable and the fix, exit 2, before NATS is asked."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import nkeys
import pytest
from podtax import natsserver


def user_seed() -> bytes:
    return nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)


@pytest.fixture
def nkey_server(tmp_path: Path) -> Iterator[str]:
    """A real nats-server whose only user authenticates with an nkey (so it sends a nonce to sign)."""
    public = nkeys.from_seed(bytearray(user_seed())).public_key.decode()
    (tmp_path / "nats.conf").write_text(f"authorization {{ users = [ {{ nkey: {public} }} ] }}\n")
    server = natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log", config=tmp_path / "nats.conf")
    try:
        yield server.url
    finally:
        server.stop()


SEED_ONLY = "-----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n"


@pytest.mark.parametrize(("variable", "content"), [
    ("PODTAX_NATS_NKEY", b"not a seed\n"),
    ("PODTAX_NATS_NKEY", b"\x00\xff\xfe"),
    ("PODTAX_NATS_CREDS", b"hello\n"),
    ("PODTAX_NATS_CREDS", b"seed-only"),  # a .creds file without its JWT block (nats-py looped for ever on it)
])
def test_a_key_file_without_a_key_is_one_line_naming_it(nkey_server: str, tmp_path: Path, variable: str,
                                                        content: bytes) -> None:
    key, seed = tmp_path / "key", user_seed().decode()
    key.write_bytes(SEED_ONLY.format(seed=seed).encode() if content == b"seed-only" else content)
    env = {**os.environ, "PODTAX_NATS_URL": nkey_server, "PODTAX_LOG_FORMAT": "text", variable: str(key)}
    try:
        done = subprocess.run([sys.executable, "-m", "podtax_parser"], env=env, capture_output=True, text=True,
                              timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the parser with {variable} of {content!r} still ran after 60 s (hung)")
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and variable in lines[0] and str(key) in lines[0], lines
    assert seed not in done.stderr and "not a seed" not in done.stderr  # what the file holds is never echoed
