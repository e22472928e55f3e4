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
from nats.aio.client import Client
from podtax import config
from podtax.config import Common

from tests.faults.configured_nats import configured_nats


def user_seed() -> bytes:
    return nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)


@pytest.fixture
def nkey_server(tmp_path: Path) -> Iterator[str]:
    """A real nats-server whose only user authenticates with an nkey (so it sends a nonce to sign)."""
    public = nkeys.from_seed(bytearray(user_seed())).public_key.decode()
    with configured_nats(tmp_path, f"authorization {{ users = [ {{ nkey: {public} }} ] }}\n") as server:
        yield server.url


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


JWT = "eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.eyJzdWIiOiJVQSJ9.c2ln"
NSC = """-----BEGIN NATS USER JWT-----
{jwt}
------END NATS USER JWT------

************************* IMPORTANT *************************
NKEY Seed printed below can be used to sign and prove identity.
NKEYs are sensitive and should be treated as secrets.

-----BEGIN USER NKEY SEED-----
{seed}
------END USER NKEY SEED------

*************************************************************
"""


def nsc_creds(seed: str, edit: str = "") -> bytes:
    """A .creds file as `nsc generate creds` writes it, then damaged the way a copy or an editor does."""
    text = NSC.format(jwt=JWT, seed=seed)
    if edit == "crlf":
        text = text.replace("\n", "\r\n")
    elif edit == "spaces after the seed":
        text = text.replace(seed, seed + "  ")
    elif edit == "indented":
        text = "".join("  " + line for line in text.splitlines(keepends=True))
    elif edit == "seed last, no newline":
        text = text[:text.index(seed) + len(seed)]
    return text.encode()


def nats_py_reads(path: Path) -> tuple[bytes, bytes]:
    """The JWT and the seed nats-py's own .creds readers take from the file (what it signs in with)."""
    client = Client()
    return bytes(client._read_creds_user_jwt(str(path))), bytes(client._read_creds_user_nkey(str(path)))


def test_a_valid_nsc_creds_file_passes_and_nats_py_reads_the_same(tmp_path: Path) -> None:
    seed = user_seed().decode()
    creds = tmp_path / "user.creds"
    creds.write_bytes(nsc_creds(seed))
    assert config.load(Common, nats_creds=creds).nats_creds == creds
    assert nats_py_reads(creds) == (JWT.encode(), seed.encode())
    nkeys.from_seed(bytearray(nats_py_reads(creds)[1])).wipe()


@pytest.mark.parametrize(("edit", "fix"), [
    ("crlf", "convert it to LF line endings"),
    ("spaces after the seed", "remove the spaces after the seed"),
    ("indented", "remove the spaces before the JWT"),
    ("seed last, no newline", "add one after the seed"),
])
def test_a_creds_file_nats_py_cannot_read_as_written_says_what_to_change(nkey_server: str, tmp_path: Path,
                                                                        edit: str, fix: str) -> None:
    """These pass a check that strips each line, but nats-py takes the line less its last byte: CRs, spaces or
    a cut seed end in 'nkeys.ErrInvalidSeed' (traceback, exit 1) when the server asks to sign its nonce."""
    seed = user_seed().decode()
    creds = tmp_path / "user.creds"
    creds.write_bytes(nsc_creds(seed, edit))
    with pytest.raises(nkeys.ErrInvalidSeed):  # what nats-py makes of it
        nkeys.from_seed(bytearray(nats_py_reads(creds)[1]))
    env = {**os.environ, "PODTAX_NATS_URL": nkey_server, "PODTAX_LOG_FORMAT": "text", "PODTAX_NATS_CREDS": str(creds)}
    done = subprocess.run([sys.executable, "-m", "podtax_parser"], env=env, capture_output=True, text=True, timeout=60)
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and "PODTAX_NATS_CREDS" in lines[0] and fix in lines[0], lines
    assert seed not in done.stderr and JWT not in done.stderr
