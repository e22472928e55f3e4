"""Fixtures of the analysis tests: a real DuckDB file in tmp_path created from schema.sql."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from analysis_synth import open_db  # noqa: E402


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "podtax.duckdb"


@pytest.fixture
def con(db_path: Path):
    c = open_db(db_path)
    yield c
    c.close()
