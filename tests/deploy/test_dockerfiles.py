"""The service images and the benchmark image: exec-form entrypoints, non-root, pinned bases and tools."""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from podtax import benchwrap

from tests.deploy._util import REPO, SERVICES, UID, console_scripts

BENCH = REPO / "deploy" / "bench-image"
TOOLS = ("sysbench", "stress-ng", "fio", "hdparm", "iperf3", "sockperf")
# Debian 12's builds (issue 5): the pins must stay within these families.
DEBIAN12_FAMILIES = {"sysbench": r"1\.0\.20\+ds-\d+", "stress-ng": r"0\.15\.06-\d+",
                     "fio": r"3\.33-\d+", "hdparm": r"9\.65\+ds-\d+", "iperf3": r"3\.12-\d+(\+deb12u\d+)?",
                     "sockperf": r"3\.7-\d+"}


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    out, current = [], ""
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        current += stripped
        word, _, rest = current.partition(" ")
        out.append((word.upper(), rest.strip()))
        current = ""
    return out


def args_defaults(steps) -> dict[str, str]:
    return dict(rest.split("=", 1) for word, rest in steps if word == "ARG" and "=" in rest)


def final_stage(steps):
    starts = [i for i, (word, _) in enumerate(steps) if word == "FROM"]
    return steps[starts[-1]:]


def bench_image_pins() -> dict[str, str]:
    defaults = args_defaults(instructions(BENCH / "Dockerfile"))
    return {tool: defaults[f"{tool.upper().replace('-', '_')}_VERSION"] for tool in TOOLS}


def check_runtime_stage(steps, script: str) -> None:
    final = final_stage(steps)
    users = [rest for word, rest in final if word == "USER"]
    assert users, "no USER in the final stage: the image would run as root"
    user = users[-1].split(":")[0]
    assert user.isdigit() and int(user) == UID, f"USER {users[-1]}: must be numeric {UID}"
    entrypoints = [rest for word, rest in final if word == "ENTRYPOINT"]
    assert len(entrypoints) == 1
    argv = json.loads(entrypoints[0])  # exec form is a JSON array; shell form is not JSON
    assert argv == [script]
    for word, rest in final:
        if word == "CMD":
            assert rest.startswith("["), "CMD in shell form"


def dockerignore_excludes(path: str) -> bool:
    """Approximate Docker's .dockerignore matching: the last matching rule decides, parents count."""
    rules = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    parts = path.strip("/").split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    excluded = False
    for rule in rules:
        negated = rule.startswith("!")
        pattern = rule.lstrip("!").rstrip("/")
        if any(fnmatch.fnmatchcase(c, pattern) for c in candidates):
            excluded = not negated
    return excluded


def copied_sources(steps) -> list[str]:
    sources = []
    for word, rest in steps:
        if word == "COPY" and "--from=" not in rest:
            sources += [a for a in rest.split() if not a.startswith("--")][:-1]
    return sources


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_service_dockerfile(service: str):
    path = REPO / "services" / service / "Dockerfile"
    steps = instructions(path)
    base = args_defaults(steps)["PYTHON_IMAGE"]
    assert re.fullmatch(r"python:3\.11\.\d+-slim(-bookworm)?@sha256:[0-9a-f]{64}", base), \
        f"base {base} not pinned to a 3.11 slim tag by digest"
    assert all(rest.startswith("${PYTHON_IMAGE}") for word, rest in steps if word == "FROM")
    scripts = console_scripts(service)
    script = f"podtax-{SERVICES[service]}"
    assert script in scripts, f"{script} is not a console script of services/{service}/pyproject.toml"
    check_runtime_stage(steps, script)
    installs = " ".join(rest for word, rest in steps if word == "RUN" and "pip install" in rest)
    assert "/src/shared" in installs and f"/src/services/{service}" in installs
    assert "--require-hashes" in installs and "lock.py subset /src/requirements.lock" in installs, \
        "not installed from the lock"
    assert "--no-build-isolation" in installs and "pip check" in installs
    for source in copied_sources(steps):
        assert (REPO / source).exists(), f"COPY {source}: no such path"
        assert not dockerignore_excludes(source.rstrip("/") + "/pyproject.toml"), f".dockerignore drops {source}"
    readme = (REPO / "services" / service / "README.md").read_text()
    assert f"services/{service}/Dockerfile" in readme and script in readme


def test_dockerignore_keeps_sources_and_drops_local_state():
    for kept in ("shared/src/podtax/benchwrap.py", "services/parser/pyproject.toml",
                 "services/analyzer/src/podtax_analyzer/schema.sql", "deploy/bench-image/record-tool-versions.sh"):
        assert not dockerignore_excludes(kept), kept
    for dropped in (".venv/bin/python", ".git/config", ".podtax/podtax.duckdb", "tests/conftest.py",
                    "services/parser/src/podtax_parser.egg-info/PKG-INFO",
                    "shared/src/podtax/__pycache__/config.cpython-311.pyc"):
        assert dockerignore_excludes(dropped), dropped


def test_service_readmes_document_every_setting_of_their_service():
    from podtax import config

    classes = {"runner": config.RunnerSettings, "parser": config.ParserSettings,
               "analyzer": config.AnalyzerSettings, "scheduler": config.SchedulerSettings,
               "host_agent": config.HostAgentSettings}
    try:
        from podtax_scheduler.service import SchedulerConfig
    except ImportError:
        pass
    else:
        classes["scheduler"] = SchedulerConfig
    for service, cls in classes.items():
        readme = (REPO / "services" / service / "README.md").read_text()
        for field in cls.model_fields:
            assert f"PODTAX_{field.upper()}" in readme, f"services/{service}/README.md lacks PODTAX_{field.upper()}"


# ---- the benchmark image ------------------------------------------------------------------------

def test_bench_image_dockerfile():
    steps = instructions(BENCH / "Dockerfile")
    defaults = args_defaults(steps)
    assert re.fullmatch(r"debian:12\.\d+-slim@sha256:[0-9a-f]{64}", defaults["DEBIAN_IMAGE"]), \
        "base not pinned to a Debian 12 tag by digest"
    for tool, version in bench_image_pins().items():
        assert re.fullmatch(DEBIAN12_FAMILIES[tool], version), f"{tool}={version} is not Debian 12's build"
    install = " ".join(rest for word, rest in steps if word == "RUN" and "apt-get install" in rest)
    for tool in TOOLS:
        assert f'"{tool}=${{{tool.upper().replace("-", "_")}_VERSION}}"' in install, f"{tool} not pinned"
    assert '"python3=${PYTHON3_VERSION}"' in install
    assert '"libiperf0=${IPERF3_VERSION}"' in install, "iperf3's code (libiperf0) at iperf3's version"
    copies = [rest for word, rest in steps if word == "COPY"]
    assert any("shared/src/podtax/benchwrap.py /usr/local/bin/podtax-bench" in c and "--chmod=0755" in c
               for c in copies)
    assert any("record-tool-versions.sh /etc/podtax/tool-versions" in rest for word, rest in steps if word == "RUN")
    check_runtime_stage(steps, "podtax-bench")
    for source in copied_sources(steps):
        assert (REPO / source).exists() and not dockerignore_excludes(source), source


def test_bench_image_has_the_tool_of_every_template_a_pod_runs():
    """The pod side of every benchmark template (iperf3, sockperf too) has its tool in the image, pinned, with its
    version recorded: the image covered sysbench, stress-ng, fio and hdparm only."""
    from podtax import templates

    needed = {t.tool for t in templates.REGISTRY.values() if "kubernetes" in t.environments and not t.control_plane}
    recorded = re.search(r"^for tool in ([a-z0-9 -]+); do$", (BENCH / "record-tool-versions.sh").read_text(), re.M)
    assert recorded and set(recorded.group(1).split()) == needed == set(TOOLS), (recorded, needed)
    assert set(bench_image_pins()) == needed


def test_host_agent_image_and_install_notes_use_the_bench_image_builds():
    defaults = args_defaults(instructions(REPO / "services" / "host_agent" / "Dockerfile"))
    for tool, version in bench_image_pins().items():
        assert defaults[f"{tool.upper().replace('-', '_')}_VERSION"] == version, tool


def _apt_versions(package: str) -> list[str] | None:
    apt_cache = shutil.which("apt-cache")
    if apt_cache is None:
        return None
    proc = subprocess.run([apt_cache, "madison", package], capture_output=True, text=True, timeout=60)
    versions = [line.split("|")[1].strip() for line in proc.stdout.splitlines() if line.count("|") >= 2]
    return versions or None


def test_bench_image_pins_exist_in_the_debian_archive():
    """On a Debian 12 machine with package lists, every pinned build must still be installable."""
    os_release = Path("/etc/os-release")
    if not os_release.exists() or 'VERSION_ID="12"' not in os_release.read_text():
        pytest.skip("not Debian 12: the archive's versions cannot be checked here")
    pins = dict(bench_image_pins(), python3=args_defaults(instructions(BENCH / "Dockerfile"))["PYTHON3_VERSION"])
    for package, version in pins.items():
        available = _apt_versions(package)
        if available is None:
            pytest.skip(f"apt-cache knows no {package} (run apt-get update): pins not checked")
        assert version in available, f"{package}={version} is not in the archive (have {available})"


def test_record_tool_versions_matches_the_wrapper(tmp_path: Path):
    """The image's tool-versions file carries exactly the version line the wrapper prints."""
    missing = [t for t in TOOLS if not (shutil.which(t) or shutil.which(f"/usr/sbin/{t}"))]
    if missing or shutil.which("dpkg-query") is None:
        pytest.skip(f"benchmark tools missing here ({missing or 'dpkg-query'}): `make sysdeps` installs them")
    out = tmp_path / "tool-versions"
    proc = subprocess.run(["sh", str(BENCH / "record-tool-versions.sh"), str(out)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert [row[0] for row in rows] == list(TOOLS) and all(len(row) == 3 for row in rows)
    for tool, package, line in rows:
        binary = shutil.which(tool) or f"/usr/sbin/{tool}"
        assert line == benchwrap.tool_version(binary), tool
        assert package and package != "unknown", tool
    assert not (tmp_path / "tool-versions.tmp").exists()


def test_record_tool_versions_fails_without_the_tools(tmp_path: Path):
    out = tmp_path / "tool-versions"
    sh = shutil.which("sh")
    assert sh
    proc = subprocess.run([sh, str(BENCH / "record-tool-versions.sh"), str(out)],
                          capture_output=True, text=True, timeout=60, env={"PATH": str(tmp_path)})
    assert proc.returncode != 0 and not out.exists()
