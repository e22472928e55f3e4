"""deploy/host: the systemd unit of the host agent and its example environment file."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from podtax import config

from tests.deploy._util import REPO, console_scripts

HOST = REPO / "deploy" / "host"
UNIT = HOST / "podtax-host-agent.service"


@pytest.fixture(scope="module")
def unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # systemd keys are case-sensitive
    parser.read_string(UNIT.read_text())
    return parser


def test_unit_runs_the_agent_console_script_with_its_env_file(unit):
    svc = unit["Service"]
    script = "podtax-host-agent"
    assert script in console_scripts("host_agent")
    assert svc["ExecStart"] == f"/opt/podtax/bin/{script}"
    assert svc["EnvironmentFile"] == "/etc/podtax/host-agent.env"
    assert svc["User"] == "root", "hdparm needs raw device access"
    assert svc["Restart"] == "on-failure"
    assert unit["Install"]["WantedBy"] == "multi-user.target"
    assert unit["Unit"]["Description"]


def test_unit_is_hardened_as_far_as_the_benchmarks_allow(unit):
    svc = unit["Service"]
    for key, value in {"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
                       "PrivateTmp": "yes", "ProtectKernelModules": "yes"}.items():
        assert svc.get(key) == value, key
    workdir = svc["Environment"].split("=", 1)[1]
    assert svc["Environment"].startswith("PODTAX_AGENT_WORKDIR=")
    writable = svc["ReadWritePaths"].split()
    assert any(workdir.startswith(path) for path in writable), "the workdir must be writable"
    assert f"/var/lib/{svc['StateDirectory']}" in writable
    assert {"CAP_SYS_RAWIO", "CAP_SYS_ADMIN"} <= set(svc["CapabilityBoundingSet"].split())
    # these would bias the host side or hide the disks from hdparm / break sysbench's LuaJIT
    for key in ("CPUQuota", "CPUWeight", "MemoryMax", "AllowedCPUs", "PrivateDevices", "DeviceAllow",
                "ProtectClock", "MemoryDenyWriteExecute"):
        assert key not in svc, key


def test_systemd_accepts_the_unit(tmp_path: Path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed: only the configparser checks ran")
    # the agent is not installed here: point ExecStart at an existing program, keep the rest as is
    text = UNIT.read_text()
    text = text.replace("ExecStart=/opt/podtax/bin/podtax-host-agent", f"ExecStart={sys.executable}")
    text = text.replace("EnvironmentFile=/etc/", "EnvironmentFile=-/etc/")
    copy = tmp_path / UNIT.name
    copy.write_text(text)
    proc = subprocess.run([analyze, "verify", str(copy)], capture_output=True, text=True, timeout=60)
    complaints = [line for line in (proc.stdout + proc.stderr).splitlines() if UNIT.name in line]
    assert proc.returncode == 0 and not complaints, "\n".join(complaints) or proc.stderr


def test_example_env_file_is_valid_host_agent_configuration(monkeypatch):
    text = (HOST / "host-agent.env.example").read_text()
    active = dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))
    commented = {line[1:].split("=", 1)[0] for line in text.splitlines()
                 if line.startswith("#PODTAX_") and "=" in line}
    fields = {f"PODTAX_{f.upper()}" for f in config.HostAgentSettings.model_fields}
    assert set(active) | commented <= fields, (set(active) | commented) - fields
    for name in [n for n in os.environ if n.startswith("PODTAX_")]:
        monkeypatch.delenv(name)
    for key, value in active.items():
        monkeypatch.setenv(key, value)
    settings = config.load(config.HostAgentSettings)
    assert settings.nats_url == active["PODTAX_NATS_URL"]


def test_install_notes_pin_the_same_tool_builds_as_the_image():
    from tests.deploy.test_dockerfiles import bench_image_pins

    notes = (HOST / "INSTALL.md").read_text()
    for tool, version in bench_image_pins().items():
        assert f"{tool}={version}" in notes, f"INSTALL.md does not pin {tool}={version}"
    assert "systemctl enable --now podtax-host-agent" in notes and "journalctl -u podtax-host-agent" in notes
