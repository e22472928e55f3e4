"""A load balancer in front of the API answering 502 with its own HTML page (nginx's), not a Kubernetes Status:
the error an object keeps and the abort's line are one line, the page's text collapsed and cut (review r4 of
3a6ff17f: the body was kept as it came, its CR/LF lines those of the object's error and the run's abort). A real HTTP
server answers; the real kubernetes client and Kube.call send the create."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from podtax_runner.controlplane import apierrors
from podtax_runner.controlplane.kubeapi import Kube, api_client
from podtax_runner.retry import brief, message

from tests.unit.fake_http import Quiet, serving

PAGE = (b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>"
        b"\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n" + b"<!-- padding -->\r\n" * 30)


class Nginx502(Quiet):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(502)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)


@pytest.fixture
def proxy() -> Iterator[str]:
    with serving(Nginx502) as url:
        yield url


def test_a_proxys_html_page_is_said_on_one_line(proxy: str) -> None:
    cfg = client.Configuration()
    cfg.host = proxy
    kube = Kube(api_client(cfg))
    with pytest.raises(ApiException) as err:
        kube.call("create", kube.core.create_namespaced_pod, "ns", {"metadata": {"name": "p"}}, retry=False)
    said = message(err.value)
    assert said.startswith("<html> <head><title>502 Bad Gateway</title></head> <body>") and len(said) <= 200, said
    assert "\n" not in brief(err.value) and "\r" not in brief(err.value), brief(err.value)
    aborted = apierrors.too_many_failed("the API", Counter(refused=1), 1, f"create: {brief(err.value)}")
    assert aborted is not None and "\n" not in aborted.detail and "\r" not in aborted.detail, aborted.detail
