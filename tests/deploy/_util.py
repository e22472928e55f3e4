"""Helpers shared by the deployment tests: repository paths, YAML loading, config variables."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import yaml
from podtax import config

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "k8s"
SERVICES = {  # service folder -> image name
    "runner": "runner",
    "parser": "parser",
    "analyzer": "analyzer",
    "scheduler": "scheduler",
    "host_agent": "host-agent",
}
UID = 10001

# Variables the deployment sets that podtax.config does not define yet. The lead implements them;
# until then they are listed here so that a typo in any other variable still fails.
PENDING_VARIABLES: set[str] = set()


def load_all(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def console_scripts(service_dir: str) -> dict[str, str]:
    data = tomllib.loads((REPO / "services" / service_dir / "pyproject.toml").read_text())
    return data["project"].get("scripts", {})


def settings_classes() -> list[type[config.Common]]:
    """podtax.config's settings classes, and the services' own extensions of them."""
    classes = [obj for obj in vars(config).values() if isinstance(obj, type) and issubclass(obj, config.Common)]
    try:
        from podtax_scheduler.service import SchedulerConfig
    except ImportError:  # the scheduler package is not installed: its extra settings are not checked
        pass
    else:
        classes.append(SchedulerConfig)
    return classes


def known_variables() -> set[str]:
    """Every PODTAX_* variable some settings class reads."""
    return {f"PODTAX_{field.upper()}" for cls in settings_classes() for field in cls.model_fields}


def kubectl() -> str | None:
    return shutil.which("kubectl")


def kustomize(path: Path) -> list[dict]:
    exe = kubectl()
    assert exe
    proc = subprocess.run([exe, "kustomize", str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"kubectl kustomize {path} failed:\n{proc.stderr}"
    return [doc for doc in yaml.safe_load_all(proc.stdout) if doc]
