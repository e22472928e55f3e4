"""A throw-away CA with a server certificate and a client certificate, for serving the simulated
Nomad API over mutual TLS like an agent with `tls { http = true, verify_https_client = true }`.
Files are written with mode 0600 (keys) into a directory of the caller's choice."""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class TlsFiles:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path

    def server_context(self, verify_client: bool = True) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(self.ca))
        ctx.load_cert_chain(str(self.server_cert), str(self.server_key))
        ctx.verify_mode = ssl.CERT_REQUIRED if verify_client else ssl.CERT_NONE
        return ctx


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write(path: Path, data: bytes, private: bool) -> None:
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def generate(directory: Path, host: str = "127.0.0.1", days: int = 30) -> TlsFiles:
    """CA, server certificate (server.global.nomad, localhost, 127.0.0.1, ::1, host) and a client
    certificate, all written to directory."""
    directory.mkdir(parents=True, exist_ok=True)
    start = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("podtax-nomadsim-ca (SIMULATED)"))
          .issuer_name(_name("podtax-nomadsim-ca (SIMULATED)")).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(start)
          .not_valid_after(start + dt.timedelta(days=days))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))

    def leaf(cn: str, usage: x509.ObjectIdentifier, names: list[x509.GeneralName]) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(ca.subject)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(start).not_valid_after(start + dt.timedelta(days=days))
                .add_extension(x509.SubjectAlternativeName(names), critical=False)
                .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
                .sign(ca_key, hashes.SHA256()))
        return (cert.public_bytes(serialization.Encoding.PEM),
                key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))

    names: list[x509.GeneralName] = [x509.DNSName("server.global.nomad"), x509.DNSName("localhost"),
                                     x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                     x509.IPAddress(ipaddress.ip_address("::1"))]
    try:
        extra: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        extra = x509.DNSName(host)
    if extra not in names:
        names.append(extra)
    server = leaf("server.global.nomad", ExtendedKeyUsageOID.SERVER_AUTH, names)
    client = leaf("cli.global.nomad", ExtendedKeyUsageOID.CLIENT_AUTH, [x509.DNSName("cli.global.nomad")])
    files = TlsFiles(directory / "nomad-ca.pem", directory / "server.pem", directory / "server-key.pem",
                     directory / "client.pem", directory / "client-key.pem")
    _write(files.ca, ca.public_bytes(serialization.Encoding.PEM), private=False)
    _write(files.server_cert, server[0], private=False)
    _write(files.server_key, server[1], private=True)
    _write(files.client_cert, client[0], private=False)
    _write(files.client_key, client[1], private=True)
    return files
