"""Fixtures of the analysis tests: a real DuckDB file in tmp_path created from schema.sql."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from analysis_synth import open_db  # noqa: E402
from podtax_analyzer.store import Store  # noqa: E402


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "podtax.duckdb"


@pytest.fixture
def con(db_path: Path):
    c = open_db(db_path)
    yield c
    c.close()


@pytest.fixture
def store(db_path: Path):
    """The analyzer's Store over a real DuckDB file (a test module may define its own)."""
    s = Store(db_path)
    yield s
    s.close()
