"""The SIMULATED Nomad API over mutual TLS (verify_https_client): the CA and client certificate it
writes are what a client needs; without a client certificate the handshake fails."""

from __future__ import annotations

import ssl
from collections.abc import Callable

import httpx
import pytest
from podtax_nomadsim.testing import Sim


def test_mutual_tls(nomadsim_factory: Callable[..., Sim]) -> None:
    sim = nomadsim_factory(tls=True, acl_token="t")
    assert sim.url.startswith("https://127.0.0.1:") and sim.tls is not None
    assert sim.tls.client_key.stat().st_mode & 0o077 == 0
    context = ssl.create_default_context(cafile=str(sim.tls.ca))
    context.load_cert_chain(str(sim.tls.client_cert), str(sim.tls.client_key))
    r = httpx.get(f"{sim.url}/v1/plugin/csi/hostpath", headers=sim.headers(), verify=context)
    assert r.status_code == 200 and r.headers["X-Podtax-Simulated"] == "true"
    no_client_cert = ssl.create_default_context(cafile=str(sim.tls.ca))
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{sim.url}/v1/status/leader", verify=no_client_cert)
    with pytest.raises(httpx.HTTPError):  # an unknown CA
        httpx.get(f"{sim.url}/v1/status/leader")


def test_tls_without_client_verification(nomadsim_factory: Callable[..., Sim]) -> None:
    sim = nomadsim_factory(tls=True, verify_client=False)
    r = httpx.get(f"{sim.url}/v1/status/leader", verify=ssl.create_default_context(cafile=str(sim.tls.ca)))
    assert r.status_code == 200
