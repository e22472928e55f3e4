"""Configuration errors name the variable to fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.config import AnalyzerSettings, ConfigError, HostAgentSettings, RunnerSettings, SchedulerSettings, load


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


NOT_DUCKDB = "a text file, not a database\n"


@pytest.mark.parametrize("cls,variable,value,says", [
    # an audit: each passed validation and then gave a traceback at start-up
    (AnalyzerSettings, "PODTAX_ANALYZER_DB", "{tmp}", "names a folder"),
    (AnalyzerSettings, "PODTAX_ANALYZER_DB", "", "is empty: unset it for the default"),
    (AnalyzerSettings, "PODTAX_ANALYZER_DB", "{tmp}/notes.txt", "is not a DuckDB database file"),
    (AnalyzerSettings, "PODTAX_ANALYZER_DB", "{tmp}/notes.txt/x.duckdb", "is a file, so"),
    (HostAgentSettings, "PODTAX_AGENT_WORKDIR", "{tmp}/notes.txt", "is not a folder"),
    (HostAgentSettings, "PODTAX_AGENT_STATE_DIR", "{tmp}/notes.txt", "is not a folder"),
    (HostAgentSettings, "PODTAX_AGENT_NODE", "a b/c", "PODTAX_AGENT_NODE"),
    (RunnerSettings, "PODTAX_RUNNER_KUBECONFIG", "{tmp}/missing.yaml", "is not a readable file"),
    (SchedulerSettings, "PODTAX_SCHEDULER_KUBECONFIG", "{tmp}/missing.yaml", "is not a readable file"),
    (SchedulerSettings, "PODTAX_SCHEDULER_LEASE_DURATION_S", "5", "must be above PODTAX_SCHEDULER_RENEW_DEADLINE_S"),
])
def test_paths_and_times_that_would_fail_at_start_up_name_their_variable(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cls: type, variable: str, value: str, says: str) -> None:
    (tmp_path / "notes.txt").write_text(NOT_DUCKDB)
    monkeypatch.setenv(variable, value.format(tmp=tmp_path))
    with pytest.raises(ConfigError) as info:
        load(cls)
    assert says in str(info.value) and (variable in str(info.value) or variable in says)


def test_an_analyzer_database_and_new_folders_are_accepted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import duckdb

    duckdb.connect(str(tmp_path / "old.duckdb")).close()
    for db in (tmp_path / "old.duckdb", tmp_path / "new" / "deeper" / "podtax.duckdb"):
        monkeypatch.setenv("PODTAX_ANALYZER_DB", str(db))
        assert load(AnalyzerSettings).analyzer_db == db
    monkeypatch.setenv("PODTAX_AGENT_WORKDIR", str(tmp_path / "work"))
    assert load(HostAgentSettings).agent_workdir == tmp_path / "work"


def test_the_documented_empty_values_still_take(monkeypatch: pytest.MonkeyPatch) -> None:
    """Empty means something for these (docs/configuration.md): any name, every namespace, the agent's region, no
    Nomad token. An empty PODTAX_RUNNER_NOMAD_TOKEN stopped the runner at start (it was no token before, as Nomad's
    CLI reads an empty NOMAD_TOKEN)."""
    from podtax_runner.controlplane.nomad import NomadConfig

    for variable in ("PODTAX_ANALYZER_ALLOWED_HOSTS", "PODTAX_SCHEDULER_NAMESPACES", "PODTAX_RUNNER_NOMAD_REGION",
                     "PODTAX_RUNNER_NOMAD_TOKEN"):
        monkeypatch.setenv(variable, "")
    assert load(AnalyzerSettings).analyzer_allowed_hosts == ""
    assert load(SchedulerSettings).scheduler_namespaces == ""
    runner = load(RunnerSettings)
    assert (runner.runner_nomad_region, runner.runner_nomad_token) == ("", None)
    assert NomadConfig.from_settings(runner).token is None
