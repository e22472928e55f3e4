"""Secrets `podtax up` generates in its data directory (files mode 0600, kept across restarts):
the analyzer API's bearer token, and NATS users with random passwords (see natsauth.py)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

API_TOKEN_FILE = "api-token"


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read, atomically (never a moment with wider permissions)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def read_or_create(path: Path) -> str:
    """The secret stored in path, or a new random one written there."""
    try:
        value = path.read_text().strip()
    except FileNotFoundError:
        value = ""
    if not value:
        value = secrets.token_urlsafe(32)
        write_private(path, value + "\n")
    return value


def api_token(data: Path, env: dict[str, str]) -> tuple[str, Path]:
    """PODTAX_API_TOKEN when set, else the token in <data>/api-token (created on first use)."""
    path = data / API_TOKEN_FILE
    given = env.get("PODTAX_API_TOKEN", "")
    if given:
        write_private(path, given + "\n")
        return given, path
    return read_or_create(path), path
