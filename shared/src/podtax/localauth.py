"""Secrets `podtax up` generates in its data directory (files mode 0600, kept across restarts):
the analyzer API's bearer token, and NATS users with random passwords (see natsauth.py)."""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
from pathlib import Path

API_TOKEN_FILE = "api-token"


def loopback(host: str | None) -> bool:
    """Whether `host` (a name, or an address; IPv6 without brackets) is this machine's loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read, atomically (never a moment with wider permissions)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError:  # a folder in the way, a full disk: no stray copy of the secret is left beside it
        tmp.unlink(missing_ok=True)
        raise


def keep_private(path: Path, text: str) -> None:
    """A secret file already there (copied, restored, made by hand) readable by others is written again
    as its owner's alone: it kept its mode, and a 0644 token was every local user's."""
    if path.stat().st_mode & 0o077:
        write_private(path, text)


def read_or_create(path: Path) -> str:
    """The secret stored in path, or a new random one written there."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        text = ""
    value = text.strip()
    if not value:
        value = secrets.token_urlsafe(32)
        write_private(path, value + "\n")
    else:
        keep_private(path, text)
    return value


def api_token(data: Path, env: dict[str, str]) -> tuple[str, Path]:
    """PODTAX_API_TOKEN when set, else the token in <data>/api-token (created on first use)."""
    path = data / API_TOKEN_FILE
    given = env.get("PODTAX_API_TOKEN", "")
    if given:
        write_private(path, given + "\n")
        return given, path
    return read_or_create(path), path


NATS_USERS_FILE = "nats-users.json"
NATS_AUTH_CONF = "nats-auth.conf"


def nats_users(data: Path, node: str) -> tuple[dict[str, str], Path]:
    """One NATS user per podtax role, and one for the host agent of `node` (natsauth.node_user), with random
    passwords, kept in <data>/nats-users.json (0600), and the nats-server configuration file holding them with
    their subject permissions (0600)."""
    from podtax import natsauth

    path = data / NATS_USERS_FILE
    try:
        text = path.read_text()
        users = json.loads(text)
    except (OSError, ValueError):
        users = {}
    names = [*natsauth.SERVICE_ROLES, natsauth.node_user(node)]
    if not isinstance(users, dict) or set(users) != set(names):
        users = {name: secrets.token_urlsafe(24) for name in names}
        write_private(path, json.dumps(users, indent=1) + "\n")
    else:
        keep_private(path, text)
    conf = data / NATS_AUTH_CONF
    write_private(conf, natsauth.authorization_block(users))
    return users, conf


def nats_env(role: str, users: dict[str, str]) -> dict[str, str]:
    """The environment that gives one service its own NATS identity (and no other): the host agent's is its
    node's (nats_users)."""
    from podtax import natsauth

    user = next(name for name in users if natsauth.role_of(name) == role)
    return {"PODTAX_NATS_USER": user, "PODTAX_NATS_PASSWORD": users[user]}


def cli_nats_url(url: str, users_file: str | None) -> str:
    """The URL `podtax up` wrote, with the CLI user's credentials when it generated users."""
    if not users_file:
        return url
    try:
        password = json.loads(Path(users_file).read_text())["cli"]
    except (OSError, ValueError, KeyError, TypeError):
        return url
    return ",".join(u.replace("://", f"://cli:{password}@", 1) if "@" not in u else u for u in url.split(","))
