"""Bearer-token authentication of the analyzer's HTTP API.

Mutating calls (anything but GET/HEAD/OPTIONS) need `Authorization: Bearer $PODTAX_API_TOKEN`; with no
token configured they are refused (403), so an analyzer is never writable by anyone who reaches it.
Reads stay open unless reads_need_token (PODTAX_API_READS_NEED_TOKEN); /healthz is always open (probes).
An analyzer listening on loopback answers only to a loopback Host header: a web page that points its own name at
127.0.0.1 (DNS rebinding) must not read the results through the user's browser. Bound wider, it answers to any
name unless PODTAX_ANALYZER_ALLOWED_HOSTS lists the ones it serves (loopback names always)."""

from __future__ import annotations

import hmac
import ipaddress
import urllib.parse

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from podtax.localauth import loopback
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

READ_METHODS = ("GET", "HEAD", "OPTIONS")
OPEN_PATHS = ("/healthz",)


def bearer(header: str | None) -> str:
    scheme, _, value = (header or "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def verdict(method: str, path: str, header: str | None, token: str | None, reads_need_token: bool) -> tuple[int, str]:
    """(0, "") when the request may proceed, else (HTTP status, reason). Pure, for tests and the middleware."""
    mutating = method.upper() not in READ_METHODS
    if path in OPEN_PATHS or not (mutating or reads_need_token):
        return 0, ""
    if not token and not mutating:  # PODTAX_API_READS_NEED_TOKEN with no token: no read is served
        return 403, ("this analyzer's reads need a token (PODTAX_API_READS_NEED_TOKEN) and it has none: set "
                     "PODTAX_API_TOKEN on the analyzer and the same value where the CLI runs")
    if not token:
        return 403, ("this analyzer accepts no changes: set PODTAX_API_TOKEN on the analyzer and the same "
                     "value where the CLI runs")
    given = bearer(header)
    if not given:
        return 401, "missing bearer token: set PODTAX_API_TOKEN (the CLI sends it as Authorization: Bearer)"
    if not hmac.compare_digest(given.encode(), token.encode()):
        return 401, "wrong bearer token: PODTAX_API_TOKEN differs from the analyzer's"
    return 0, ""


def host_name(header: str | None) -> str | None:
    """The Host header's name as config.host_names spells the allowed ones: lowercased, without port, brackets or
    final dot, an address in its canonical form (`[FE80::0001]:8700` -> `fe80::1`, `localhost.` -> `localhost`)."""
    try:
        name = (urllib.parse.urlsplit(f"//{header or ''}").hostname or "").rstrip(".")
    except ValueError:  # a port that is no number, a broken [IPv6]
        return None
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name or None


def host_refusal(header: str | None, loopback_only: bool, allowed: frozenset[str] = frozenset(),
                 path: str = "") -> str | None:
    """Why a request whose Host header is `header` is not this analyzer's (None when it is). `allowed`
    (PODTAX_ANALYZER_ALLOWED_HOSTS, config.host_names): the names it answers to besides loopback ones, /healthz
    excepted (a cluster's probes name the pod's address); unset, one listening on loopback answers only to those."""
    name = host_name(header)
    if loopback(name) or not (allowed or loopback_only):
        return None
    if allowed:
        if path in OPEN_PATHS or name in allowed:
            return None
        return (f"Host {(header or '')[:100]!r} is not one this analyzer answers to: add its name to "
                f"PODTAX_ANALYZER_ALLOWED_HOSTS to serve it")
    return (f"Host {(header or '')[:100]!r} is not this analyzer's: it listens on loopback and answers only to "
            f"127.0.0.1, localhost or ::1 (set PODTAX_ANALYZER_HOST to serve other names)")


class Guard:
    """The checks above before every HTTP request, as plain ASGI: Starlette's BaseHTTPMiddleware (app.middleware)
    ended a streamed answer whose rows failed mid-way (rowstream) as if whole, so a client got 200 and a cut-short
    JSON array with the chunked body's proper end; uvicorn now sees the error and drops the connection instead."""

    def __init__(self, app: ASGIApp, token: str | None, reads_need_token: bool, loopback_only: bool,
                 allowed_hosts: frozenset[str]) -> None:
        self.app, self.token, self.reads_need_token = app, token, reads_need_token
        self.loopback_only, self.allowed_hosts = loopback_only, allowed_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers, path = Headers(scope=scope), scope["path"]
        if reason := host_refusal(headers.get("host"), self.loopback_only, self.allowed_hosts, path):
            await JSONResponse({"detail": reason}, status_code=400)(scope, receive, send)
            return
        code, reason = verdict(scope["method"], path, headers.get("authorization"), self.token,
                               self.reads_need_token)
        if code:
            extra = {"WWW-Authenticate": 'Bearer realm="podtax"'} if code == 401 else {}
            await JSONResponse({"detail": reason}, status_code=code, headers=extra)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def install(app: FastAPI, token: str | None, reads_need_token: bool = False, loopback_only: bool = False,
            allowed_hosts: frozenset[str] = frozenset()) -> None:
    app.add_middleware(Guard, token=token, reads_need_token=reads_need_token, loopback_only=loopback_only,
                       allowed_hosts=allowed_hosts)
