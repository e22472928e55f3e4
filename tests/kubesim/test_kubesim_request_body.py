"""A request body that is no object, or YAML that does not parse, is a 400 BadRequest Status naming what was wrong,
as the API server answers: a POST of `[1]`, `"x"`, `1` or `null` and a YAML body such as `a: [` were a 500
(`Server got itself in trouble`) with a traceback in the emulator's log (helper hU, session 54)."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request

import pytest
from podtax_kubesim.testing import Sim

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
BODIES = [  # method, path, content type, body, the Status message
    ("POST", CONFIGMAPS, "application/json", "[1]", "the request body must be a JSON object"),
    ("POST", CONFIGMAPS, "application/json", '"x"', "the request body must be a JSON object"),
    ("POST", CONFIGMAPS, "application/json", "null", "the request body must be a JSON object"),
    ("POST", "/api/v1/namespaces/default/bindings", "application/json", "[]", "the request body must be a JSON object"),
    ("DELETE", CONFIGMAPS + "/x", "application/json", "[1]", "the request body must be a JSON object"),
    ("POST", CONFIGMAPS, "application/yaml", "a: [", "the request body is not valid YAML: while parsing a flow"),
    ("POST", CONFIGMAPS, "application/yaml", "- 1", "the request body must be a JSON object"),
    ("POST", CONFIGMAPS, "application/yaml", "[]", "the request body must be a JSON object"),  # taken as {}: 422
    ("POST", CONFIGMAPS, "application/yaml", "0", "the request body must be a JSON object"),  # 'name required'
    ("POST", CONFIGMAPS, "application/yaml", "false", "the request body must be a JSON object"),  # (r4, session 54)
    ("POST", CONFIGMAPS, "application/yaml", "!!python/object:os.system {}", "the request body is not valid YAML: "
                                                                            "could not determine a constructor"),
]


def _send(sim: Sim, method: str, path: str, ctype: str, body: str) -> tuple[int, dict]:
    req = urllib.request.Request(sim.url + path, data=body.encode(), method=method,
                                 headers={"Authorization": f"Bearer {sim.token}", "Content-Type": ctype})
    assert sim.emulator.tls is not None
    ctx = ssl.create_default_context(cadata=sim.emulator.tls.ca_pem.decode())
    try:
        with urllib.request.urlopen(req, timeout=10, context=ctx) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        text = exc.read().decode()
        return exc.code, json.loads(text) if text.startswith("{") else {"message": text}


@pytest.mark.parametrize(("method", "path", "ctype", "body", "says"), BODIES,
                         ids=[f"{m} {c.split('/')[1]} {b}" for m, _, c, b, _ in BODIES])
def test_a_body_that_is_no_object_is_a_400(kubesim: Sim, method: str, path: str, ctype: str, body: str,
                                           says: str) -> None:
    if method == "DELETE":
        assert _send(kubesim, "POST", CONFIGMAPS, "application/json", '{"metadata": {"name": "x"}}')[0] == 201
    code, status = _send(kubesim, method, path, ctype, body)
    assert (code, status.get("reason")) == (400, "BadRequest"), status
    assert status["message"].startswith(says), status
