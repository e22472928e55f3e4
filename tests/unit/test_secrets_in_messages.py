"""Secrets stay out of what podtax prints and readable only by their owner (audit hS). A NATS URL may carry a
password (nats://user:password@host) or a token (nats://token@host): a bad one was echoed whole in the one-line
error (`PODTAX_NATS_URL: 'nats://cli:...@host:99999' needs a host ...`) that a service also writes to its log. The
secrets `podtax up` keeps in its data directory (the API token, the NATS users' passwords) are 0600 when it makes
them, but a file already there (copied, restored, made by hand) kept its mode: 0644 left the token readable by
every user of the machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from podtax import localauth, natsauth

PODTAX = str(Path(sys.executable).with_name("podtax"))
SECRET = "s3cret-Pw-9f7e"


@pytest.mark.parametrize(("url", "shown"), [
    (f"nats://cli:{SECRET}@127.0.0.1:99999", "nats://cli:***@127.0.0.1:99999"),  # a port out of range
    (f"nats://{SECRET}@127.0.0.1:0", "nats://***@127.0.0.1:0"),  # a token as the user
    (f"http://cli:{SECRET}@127.0.0.1:4222", "http://cli:***@127.0.0.1:4222"),  # not a NATS scheme
    (f"nats://127.0.0.1:4222,nats://cli:{SECRET}@h2:99999", "nats://cli:***@h2:99999"),  # the second of a list
    (f"nats://cli:p@{SECRET}@127.0.0.1:0", "nats://cli:***@127.0.0.1:0"),  # an @ in the password
    (f"cli:{SECRET}@127.0.0.1:4222", "'cli:***@127.0.0.1:4222'"),  # no scheme: was echoed whole, twice
    (f"nats//cli:{SECRET}@127.0.0.1:4222", "'nats//cli:***@127.0.0.1:4222'"),  # a scheme mistyped
    (f"{SECRET}@127.0.0.1:4222", "'***@127.0.0.1:4222'"),  # a token, no scheme
])
def test_a_bad_nats_url_is_said_without_its_secret(url: str, shown: str, tmp_path: Path) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    proc = subprocess.run([PODTAX, "campaign", "status", "x"], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, env={**clean, "PODTAX_DATA_DIR": str(tmp_path), "PODTAX_NATS_URL": url})
    assert proc.returncode == 2, proc.stderr
    assert "PODTAX_NATS_URL" in proc.stderr and shown in proc.stderr, proc.stderr
    assert SECRET not in proc.stderr + proc.stdout, proc.stderr


def test_secret_files_already_there_are_made_private(tmp_path: Path) -> None:
    token_file = tmp_path / localauth.API_TOKEN_FILE
    token_file.write_text("an-old-token-0123456789\n")
    users_file = tmp_path / localauth.NATS_USERS_FILE
    users = {user: f"pw-{user}-0123456789" for user in [*natsauth.SERVICE_ROLES, natsauth.node_user("n1")]}
    users_file.write_text(json.dumps(users))
    for path in (token_file, users_file):
        path.chmod(0o644)
    assert localauth.api_token(tmp_path, {}) == ("an-old-token-0123456789", token_file)  # kept ...
    assert localauth.nats_users(tmp_path, "n1")[0] == users
    for path in (token_file, users_file, tmp_path / localauth.NATS_AUTH_CONF):
        assert path.stat().st_mode & 0o777 == 0o600, path  # ... and now its owner's alone
