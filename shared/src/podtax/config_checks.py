"""Checks and patterns the settings classes (podtax.config) validate with, and helpers they share with the CLI:
names and patterns of Kubernetes objects, host names, TLS files, URLs without their secrets."""

from __future__ import annotations

import io
import ipaddress
import re
import socket
import ssl
from pathlib import Path

NAMESPACE = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"  # a Kubernetes namespace's name (a DNS-1123 label)
# most objects' names, a Lease's too: a DNS-1123 subdomain, at most 253 characters (max_length), dot-separated
# parts each starting and ending with a letter or digit (the API server refuses a..b, a.-b, a-.b)
OBJECT_NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
NATS_TLS_SETTINGS = ("PODTAX_NATS_TLS_CA", "PODTAX_NATS_TLS_CERT", "PODTAX_NATS_TLS_KEY")
NOMAD_TLS_SETTINGS = ("PODTAX_RUNNER_NOMAD_CACERT", "PODTAX_RUNNER_NOMAD_CLIENT_CERT", "PODTAX_RUNNER_NOMAD_CLIENT_KEY")


def path_names(*paths: Path | None) -> tuple[str | None, ...]:
    """Paths as the strings ssl takes (None stays None)."""
    return tuple(str(p) if p else None for p in paths)


def tls_context(ca: str | None, cert: str | None, key: str | None,
                settings: tuple[str, str, str] = NATS_TLS_SETTINGS) -> ssl.SSLContext:
    """A client's TLS context from a CA, a certificate and its key; ValueError naming the setting (of `settings`:
    CA, certificate, key) whose file ssl cannot use (not PEM, a key not the certificate's). The settings check
    it at start-up: it was a traceback at the first connect."""
    try:
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca)
    except ssl.SSLError as exc:
        raise ValueError(f"{settings[0]}: {ca} holds no certificate ssl can read ({exc.reason or exc}); point it "
                         f"at the PEM certificate of the CA that signed the server's") from None
    if cert:
        try:
            ctx.load_cert_chain(cert, key)
        except ssl.SSLError as exc:
            raise ValueError(f"{settings[1]} / {settings[2]}: {cert} and {key} are not a PEM certificate and its "
                             f"key ({exc.reason or exc}); point them at the client's") from None
    return ctx




def redact(url: str) -> str:
    """A URL list without its secrets: nats://user:secret@host -> nats://user:***@host, and a token given as the
    user (nats://token@host) -> nats://***@host. The user part ends at the last `@` before the path; without a
    scheme (user:secret@host, nats//user:secret@host: the commonest mistake) at the last `@`."""
    def one(u: str) -> str:
        scheme, sep, rest = u.partition("://")
        netloc, slash, path = rest.partition("/") if sep else (u, "", "")
        userinfo, at, host = netloc.rpartition("@")
        if not at:
            return u
        user, colon, _ = userinfo.partition(":")
        return f"{scheme + sep if sep else ''}{user + ':' if colon else ''}***@{host}{slash}{path}"

    return ",".join(one(u) for u in url.split(","))




def is_duckdb_file(path: Path) -> bool:
    """Whether a file starts as DuckDB's do (the magic `DUCK` after an 8-byte checksum)."""
    with path.open("rb") as f:
        return f.read(12)[8:12] == b"DUCK"


def folder_path(v: Path | None) -> Path | None:
    """A folder the service creates when missing: anything else already there is refused at start-up
    (an audit's file given as the agent's work directory gave a NotADirectoryError traceback)."""
    if v is not None and v.exists() and not v.is_dir():
        raise ValueError(f"{v} exists and is not a folder: name a folder (it is created when missing)")
    return v


def readable_file(v: Path | None) -> Path | None:
    """A file the service reads (a kubeconfig): it must be there (an audit's missing one gave a traceback)."""
    if v is not None and not v.is_file():
        raise ValueError(f"{v} is not a readable file: point it at an existing file, or unset it")
    return v


def _seed_ok(seed: bytes) -> bool:
    import nkeys  # nats-py's own dependency for nkey and .creds authentication

    try:
        nkeys.from_seed(bytearray(seed)).wipe()
    except (nkeys.NkeysError, ValueError, TypeError):
        return False
    return True


def _line_fix(line: bytes, what: str) -> str | None:
    """What to change in a .creds line so that nats-py reads `what` from it: nats-py takes the line whole, less its
    last byte (meant to be the newline), so spaces, a CR of CRLF endings or a missing newline stay in the key."""
    if line.endswith(b"\r\n"):
        return "it has CRLF (Windows) line endings: convert it to LF line endings (dos2unix)"
    if not line.endswith(b"\n"):
        return f"the {what} line does not end in a newline: add one after the {what}"
    if line[:-1] != line[:-1].rstrip():
        return f"remove the spaces after the {what}"
    if line[:-1] != line[:-1].lstrip():
        return f"remove the spaces before the {what} (the line must start with it)"
    return None


def nats_key_problem(setting: str, path: Path) -> str | None:
    """Why the file of PODTAX_NATS_NKEY (a seed, SU...) or PODTAX_NATS_CREDS (a .creds file: a user JWT block and a
    seed block) cannot sign in, or None. Read as nats-py reads it (the seed file stripped; in a .creds file the line
    after each block's BEGIN line, less its last byte). nats-py found out only when the server asked: a traceback
    (nkeys.ErrInvalidSeed, TypeError), or a .creds file without its JWT block read for ever."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"{setting}: cannot read {path} ({exc.strerror}): point it at a file this service can read, or unset it"
    if setting == "PODTAX_NATS_NKEY":
        if _seed_ok(data.strip()):
            return None
        return (f"{setting}: {path} holds no nkey seed (one line SU..., as `nk -gen user` writes): point it at the "
                "user's seed file, or unset it")
    lines = io.BytesIO(data).readlines()  # split at b"\n" only, each line with its ending, as nats-py reads them

    def after(marker: bytes) -> bytes:
        at = next((i for i, line in enumerate(lines) if marker in line), len(lines))
        return lines[at + 1] if at + 1 < len(lines) else b""

    jwt, seed = after(b"BEGIN NATS USER JWT"), after(b"BEGIN USER NKEY SEED")
    if jwt.strip() and _seed_ok(seed.strip()):
        fix = _line_fix(jwt, "JWT") or _line_fix(seed, "seed")
        if fix is None and _seed_ok(seed[:-1]):
            return None
        return (f"{setting}: {path} holds a user JWT and an nkey seed that nats-py cannot read as they are written: "
                f"{fix or 'write it as `nsc generate creds` does'}")
    return (f"{setting}: {path} is not a NATS credentials file (it needs a user JWT block and an nkey seed block, "
            "as `nsc generate creds` writes): point it at the user's .creds file, or unset it")


_HOST_LABEL = r"[a-z0-9_]([-a-z0-9_]{0,61}[a-z0-9])?"
_HOST_NAME = re.compile(rf"^{_HOST_LABEL}(\.{_HOST_LABEL})*$")


def host_names(value: str) -> frozenset[str]:
    """The comma-separated names or addresses of PODTAX_ANALYZER_ALLOWED_HOSTS, lowercased, without a final dot or
    an IPv6 address's brackets (as the Host header's name is compared); ValueError names the first that is not one
    (a URL, a port, a path, a space inside)."""
    names = set()
    for given in value.split(","):
        name = given.strip().lower().rstrip(".").removeprefix("[").removesuffix("]")
        if not name:
            continue
        try:
            names.add(str(ipaddress.ip_address(name)))
        except ValueError:
            if len(name) > 253 or not _HOST_NAME.match(name):
                raise ValueError(f"{given.strip()!r} is not a host name or address: list names as clients put them "
                                 "in the Host header, comma-separated, without scheme, port or path (e.g. "
                                 "podtax.example.org,10.0.0.5)") from None
            names.add(name)
    return frozenset(names)




# a node name, as `podtax up --node` takes them (Kubernetes itself takes no '_')
NODE_PATTERN = r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,251}[A-Za-z0-9])?$"


def host_node() -> str:
    """This host's node name: its hostname in lowercase, as kubelet registers it (Kubernetes node names are
    lowercase): the host's runs pair with its pods' whatever case the hostname has."""
    return socket.gethostname().lower()


def capitals_problem(node: str) -> str | None:
    """Why `node` is not a node name as Kubernetes writes it (capitals), naming the spelling to write; or None."""
    if node != node.lower():
        return (f"node {node!r}: node names are lowercase, as Kubernetes writes them (kubelet lowercases the "
                f"hostname), so the host's and the pods' runs pair: write {node.lower()}")
    return None
