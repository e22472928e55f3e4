"""POST /api/imports/twice drops the copies' rows of the imported runs held twice: of one campaign with
?campaign=NAME, of EVERY campaign without it. A campaign sent as a JSON body ({"campaign": "base"}) or a misspelt
parameter (?campain=base) was ignored, so the call dropped copies in every campaign instead of the one meant (200);
POST /api/reparse refuses both for that reason. Now this POST refuses them too (422), before anything is dropped.
The real app on a real DuckDB file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

TOKEN = "t0ken-for-tests-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.mark.parametrize(("kwargs", "says"), [
    ({"json": {"campaign": "base"}}, "POST /api/imports/twice takes no body: pass ?campaign=NAME in the URL"),
    ({"content": b"{bad"}, "takes no body"),
    ({"params": {"campain": "base"}}, "unknown parameter(s) campain: POST /api/imports/twice takes ?campaign=NAME"),
])
def test_imports_twice_refuses_what_it_would_ignore(tmp_path: Path, kwargs: dict[str, Any], says: str) -> None:
    store = Store(tmp_path / "api.duckdb")
    try:
        client = TestClient(create_app(store, TOKEN))
        resp = client.post("/api/imports/twice", headers=AUTH, **kwargs)
        assert resp.status_code == 422 and says in resp.json()["detail"], resp.text
        assert client.post("/api/imports/twice", headers=AUTH, params={"campaign": "base"}).status_code == 200
    finally:
        store.close()
