"""A throw-away certificate authority and serving certificate for the emulator's HTTPS listener.
kubectl and client-go send a bearer token only over TLS, so the token needs HTTPS; the CA goes into
the kubeconfig (certificate-authority-data), which clients then trust."""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
import tempfile
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Serving:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    def context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        with tempfile.TemporaryDirectory(prefix="kubesim-tls-") as tmp:  # load_cert_chain reads files only
            cert, key = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
            for path, data in ((cert, self.cert_pem), (key, self.key_pem)):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
            ctx.load_cert_chain(cert, key)
        return ctx


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def generate(host: str, days: int = 365) -> Serving:
    """A new CA and a certificate for host, localhost, 127.0.0.1 and ::1 signed by it."""
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("podtax-kubesim-ca")).issuer_name(_name("podtax-kubesim-ca"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now).not_valid_after(now + dt.timedelta(days=days))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    names: list[x509.GeneralName] = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                     x509.IPAddress(ipaddress.ip_address("::1"))]
    try:
        extra: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        extra = x509.DNSName(host)
    if extra not in names:
        names.append(extra)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(_name("podtax-kubesim")).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + dt.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    return Serving(ca.public_bytes(pem), cert.public_bytes(pem),
                   key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
