"""Configuration errors name the variable to fix."""

from __future__ import annotations

import pytest
from podtax.config import AnalyzerSettings, ConfigError, HostAgentSettings, RunnerSettings, load


def test_bad_port_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODTAX_ANALYZER_PORT", "eighty")
    with pytest.raises(ConfigError) as info:
        load(AnalyzerSettings)
    assert "PODTAX_ANALYZER_PORT" in str(info.value)
    assert "eighty" in str(info.value)


def test_bad_nats_url_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", "http://localhost:4222")
    with pytest.raises(ConfigError, match="PODTAX_NATS_URL.*nats://"):
        load(RunnerSettings)


def test_bounds_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODTAX_AGENT_OUTPUT_CAP_BYTES", "10")
    with pytest.raises(ConfigError, match="PODTAX_AGENT_OUTPUT_CAP_BYTES"):
        load(HostAgentSettings)


def test_defaults_and_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", "nats://10.0.0.1:4222")
    monkeypatch.setenv("PODTAX_AGENT_NODE", "pi-1")
    s = load(HostAgentSettings)
    assert s.nats_url == "nats://10.0.0.1:4222" and s.agent_node == "pi-1"


def test_service_main_exits_2_on_bad_config(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    from podtax_parser.__main__ import main

    monkeypatch.setenv("PODTAX_MAX_DELIVER", "0")
    assert main([]) == 2
    assert "PODTAX_MAX_DELIVER" in capsys.readouterr().err


def test_analyzer_memory_limit_has_a_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load(AnalyzerSettings).analyzer_memory_mb == 1024  # bounded by default (DuckDB's: 80% of the RAM)
    monkeypatch.setenv("PODTAX_ANALYZER_MEMORY_MB", "64")
    with pytest.raises(ConfigError, match="PODTAX_ANALYZER_MEMORY_MB.*128"):
        load(AnalyzerSettings)
    monkeypatch.setenv("PODTAX_ANALYZER_MEMORY_MB", "512")
    assert load(AnalyzerSettings).analyzer_memory_mb == 512
