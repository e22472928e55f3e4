"""The READMEs say what the code does: commands and flags exist, settings exist with the stated
defaults, Makefile targets and dependencies are all listed. Checked against the real `podtax` entry
point, the settings classes, the Makefile, the pyprojects and the lock."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path

import pytest
from podtax import config
from pydantic.fields import FieldInfo

REPO = Path(__file__).parents[2]
PODTAX = str(Path(sys.executable).with_name("podtax"))
README = (REPO / "README.md").read_text()
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted(REPO.glob("services/*/README.md")),
        *sorted(REPO.glob("tools/*/README.md")), *sorted(REPO.glob("deploy/*/README.md")),
        REPO / "deploy" / "host" / "INSTALL.md"]
SETTINGS = {"runner": config.RunnerSettings, "parser": config.ParserSettings, "analyzer": config.AnalyzerSettings,
            "scheduler": config.SchedulerSettings, "host_agent": config.HostAgentSettings}


@cache
def _help(words: tuple[str, ...]) -> str:
    proc = subprocess.run([PODTAX, *words, "--help"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COLUMNS": "200", "PODTAX_API_URL": "http://127.0.0.1:9"})
    assert proc.returncode == 0, f"podtax {' '.join(words)} --help: {proc.stderr}"
    return proc.stdout


def help_text(words: list[str]) -> str:
    return _help(tuple(words))


def readme_commands() -> list[tuple[list[str], list[str]]]:
    """(command words, flags) of every `podtax ...` line of the README's "Using it" block."""
    block = README.split("## Using it", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    out = []
    for line in block.splitlines():
        words = line.split("#", 1)[0].split()
        if not words or words[0] != "podtax":
            continue
        command = words[1:3] if words[1] in ("campaign", "volumes") else words[1:2]
        flags = [re.sub(r"[^-a-z]", "", w) for w in words if w.lstrip("[").startswith("--")]
        out.append((command, flags))
    return out


@pytest.mark.parametrize(("command", "flags"), readme_commands(), ids=lambda v: " ".join(v))
def test_readme_commands_and_flags_exist(command: list[str], flags: list[str]) -> None:
    text = help_text(command)
    for flag in flags:
        assert flag in text, f"README shows `podtax {' '.join(command)} {flag}`, which its --help does not know"


def test_simulate_help_describes_the_workload_file() -> None:
    text = help_text(["simulate"])
    for key in ("duration_s", "classes", "rate_per_s", "runtime_s", "contention", "copies", "requests"):
        assert key in text, f"`podtax simulate --help` does not describe the workload key {key}"


def _default(field: FieldInfo) -> object:
    """The field's default; None when computed at start-up (a default factory) or unset."""
    return None if field.default_factory is not None else field.default


def _stated(cell: str) -> str | None:
    """The default a README table cell states: a leading `literal`, or a bare number; None for prose."""
    m = re.match(r"`([^`]*)`", cell) or re.fullmatch(r"([0-9][0-9.]*)", cell)
    return m.group(1) if m else None


def _same(stated: str, default: object) -> bool:
    if isinstance(default, bool):
        return stated.lower() == str(default).lower()
    if isinstance(default, int | float):
        return float(stated) == float(default)
    return stated == str(default)


@pytest.mark.parametrize("service", sorted(SETTINGS))
def test_service_readme_defaults_are_the_code_defaults(service: str) -> None:
    fields = SETTINGS[service].model_fields
    text = (REPO / "services" / service / "README.md").read_text()
    checked = 0
    for name, cell in re.findall(r"^\| `(PODTAX_[A-Z0-9_]+)` \| ([^|]*) \|", text, re.M):
        field = fields.get(name.removeprefix("PODTAX_").lower())
        assert field is not None, f"services/{service}/README.md names {name}, which the service does not read"
        stated, default = _stated(cell.strip()), _default(field)
        if stated is None or default is None:
            continue
        assert _same(stated, default), f"services/{service}/README.md: {name} defaults to {default!r}, not {stated}"
        checked += 1
    assert checked >= 5, f"services/{service}/README.md: no settings table found"


def test_every_documented_setting_exists() -> None:
    code = "\n".join(p.read_text() for p in REPO.glob("*/**/src/**/*.py"))
    known = {f"PODTAX_{name.upper()}" for cls in SETTINGS.values() for name in cls.model_fields}
    for doc in DOCS:
        for name in set(re.findall(r"PODTAX_[A-Z0-9_]*[A-Z0-9]", doc.read_text())):
            assert name in known or name in code or any(k.startswith(name + "_") for k in known), \
                f"{doc.relative_to(REPO)} names {name}, which no code reads"


def test_every_make_target_is_in_the_readme() -> None:
    phony = re.search(r"^\.PHONY:(.*)$", (REPO / "Makefile").read_text(), re.M)
    assert phony is not None
    for target in phony.group(1).split():
        if target != "all":
            assert f"make {target}`" in README or f"make {target} " in README, f"README does not name make {target}"


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~;\s]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_dependency_table_matches_the_pyprojects_and_the_lock() -> None:
    table = README.split("## Dependencies and why", 1)[1].split("\n\n", 2)[1]
    listed = set()
    for cell in re.findall(r"^\| ([^|]+) \|", table, re.M)[1:]:
        for word in re.split(r"[,()/ ]+", cell.strip()):
            if word:
                listed.add("opentelemetry-" + word if word == "sdk" else word.lower())
    pinned = set(re.findall(r"^([a-z0-9][a-z0-9._-]*)==", (REPO / "requirements.lock").read_text(), re.M))
    assert listed - pinned == set(), "README lists dependencies that are not in requirements.lock"
    direct = set()
    for pyproject in [REPO / "shared" / "pyproject.toml", *REPO.glob("services/*/pyproject.toml"),
                      *REPO.glob("tools/*/pyproject.toml")]:
        direct |= {_name(r) for r in tomllib.loads(pyproject.read_text())["project"]["dependencies"]}
    for requirements in ("requirements-dev.txt", "requirements.in"):
        direct |= {_name(line) for line in (REPO / requirements).read_text().splitlines()
                   if line.strip() and not line.startswith(("#", "-"))}
    own = {"podtax", "podtax-kubesim"}
    assert direct - own - listed == set(), "README's dependency table misses direct dependencies"
