"""A NATS server that runs and answers, but refuses this client: a password it does not know, TLS with a certificate
the client cannot verify (self-signed, or issued for another name), mutual TLS without a client certificate. Each
said "cannot reach NATS ... start one with `podtax up` or point PODTAX_NATS_URL at a running server" (audit hH):
the server is running, and that fix changes nothing. Now the line names the setting that fixes it."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from podtax.cli.main import main

from tests.faults.configured_nats import configured_nats

HINT = "start one with `podtax up`"


def certificate(folder: Path, name: str, alt: str) -> tuple[Path, Path]:
    """A self-signed certificate and its key, for subjectAltName `alt`."""
    cert, key = folder / f"{name}.pem", folder / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "2", "-subj", f"/CN={name}", "-addext", f"subjectAltName={alt}"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


@pytest.fixture
def served(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[str, Path]]:
    """A real nats-server with the configuration `request.param` names; its URL and the CA file to trust."""
    cert, key = certificate(tmp_path, "server", "IP:127.0.0.1")
    other, other_key = certificate(tmp_path, "other", "DNS:other.example")
    conf = {
        "password": "authorization { user: a, password: right }",
        "tls": f'tls {{ cert_file: "{cert}", key_file: "{key}" }}',
        "another-name": f'tls {{ cert_file: "{other}", key_file: "{other_key}" }}',
        "mutual-tls": f'tls {{ cert_file: "{cert}", key_file: "{key}", ca_file: "{cert}", verify: true }}',
    }[request.param]
    with configured_nats(tmp_path, conf + "\n") as server:
        yield server.url, (other if request.param == "another-name" else cert)


@pytest.mark.parametrize(("served", "env", "fix"), [
    ("password", {}, "PODTAX_NATS_USER"),
    ("password", {"PODTAX_NATS_USER": "a", "PODTAX_NATS_PASSWORD": "wrong"}, "PODTAX_NATS_USER"),
    ("tls", {}, "PODTAX_NATS_TLS_CA"),
    ("another-name", {"PODTAX_NATS_TLS_CA": "{ca}"}, "not issued for 127.0.0.1"),
    ("mutual-tls", {"PODTAX_NATS_TLS_CA": "{ca}"}, "PODTAX_NATS_TLS_CERT"),
], indirect=["served"])
def test_a_refusal_names_its_fix(served: tuple[str, Path], env: dict[str, str], fix: str,
                                 monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    url, ca = served
    monkeypatch.setenv("PODTAX_NATS_URL", url)  # nats-py takes up TLS when the server asks for it
    for name, value in env.items():
        monkeypatch.setenv(name, value.format(ca=ca))
    monkeypatch.setenv("PODTAX_CLI_TIMEOUT", "20")
    code = main(["campaign", "status", "quick"])
    err = capsys.readouterr().err.strip()
    assert code == 1, err
    assert fix in err and HINT not in err, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err


@pytest.fixture
def not_nats(request: pytest.FixtureRequest) -> Iterator[str]:
    """Another program on a free port: an HTTP server (what nats-server's monitoring port 8222 is; it waits for a
    request, so the client waited for NATS's INFO line until its timeout) or one that greets in its own protocol."""
    import http.server
    import socketserver
    import threading

    class Greeter(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")

    handler = http.server.SimpleHTTPRequestHandler if request.param == "http" else Greeter
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"nats://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("not_nats", ["http", "greeting"], indirect=True)
def test_another_program_on_the_port_is_named(not_nats: str, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """It said '(TimeoutError)' or '(nats: empty response from server when expecting INFO message)', then 'start
    one with `podtax up`'."""
    monkeypatch.setenv("PODTAX_NATS_URL", not_nats)
    code = main(["campaign", "status", "quick"])
    err = capsys.readouterr().err.strip()
    assert code == 1, err
    assert ("does not speak NATS" in err or "did not answer as NATS does" in err) and "4222" in err, err
    assert HINT not in err, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err


@pytest.fixture
def answering(request: pytest.FixtureRequest, nats_url: str) -> Iterator[str]:
    """What answers at a free port (review r5 L3): a load balancer with no ready server behind it (it accepts, then
    closes), or a real nats-server whose INFO line comes later than the connect timeout (behind a relay that holds
    its first bytes back 0.8 s: an overloaded server), or the HTTP server of the test above named without a scheme."""
    import contextlib
    import http.server
    import socket
    import socketserver
    import threading
    import time

    upstream = nats_url.rsplit("//", 1)[1].rsplit(":", 1)

    class Closing(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.close()

    class Slow(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            with socket.create_connection((upstream[0], int(upstream[1]))) as up:
                time.sleep(0.8)  # the fault staged: a server this slow, not a wait for the test

                def pipe(a: socket.socket, b: socket.socket) -> None:
                    try:
                        while data := a.recv(65536):
                            b.sendall(data)
                    except OSError:
                        pass
                    finally:
                        with contextlib.suppress(OSError):
                            b.shutdown(socket.SHUT_WR)

                back = threading.Thread(target=pipe, args=(up, self.request), daemon=True)
                back.start()
                pipe(self.request, up)
                back.join(5)

    handler = {"closing": Closing, "slow-nats": Slow, "http-no-scheme": http.server.SimpleHTTPRequestHandler}
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler[request.param])
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        yield f"127.0.0.1:{port}" if request.param == "http-no-scheme" else f"nats://127.0.0.1:{port}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(("answering", "said"), [
    ("closing", "closes them without a word"),
    ("slow-nats", "a nats-server answered there, but later than the connect timeout (0.5 s)"),
    ("http-no-scheme", "did not answer as NATS does"),
], indirect=["answering"])
def test_what_answers_is_named(answering: str, said: str) -> None:
    """Before: the closing balancer 'does not speak NATS (it answered in another protocol)', the slow nats-server
    'did not answer as NATS does ... point PODTAX_NATS_URL at the client port' (it was the client port), the URL
    without a scheme (settings refuse one; nats-py reads it as nats://) 'start one with `podtax up`' (the probe
    went to another address). Bus.connect as a service calls it (a command's deadline ends it sooner)."""
    import asyncio

    from podtax.bus import Bus, BusError

    async def run() -> str:
        try:
            bus = await Bus.connect(answering, "t", timeout=0.5, auth={})
        except BusError as exc:
            return str(exc)
        await bus.close()
        return "connected"

    err = asyncio.run(run())
    assert said in err and HINT not in err, err
