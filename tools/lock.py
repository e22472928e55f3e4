"""The dependency lock: check it against every pyproject, and cut the part one image needs.

`requirements.lock` is uv's `pip compile --universal --generate-hashes --annotation-style line`
output for `requirements.in` (every podtax package and the dev tools), with the editable podtax
packages themselves left out. Every install (make, CI, each Dockerfile) installs from it with
`pip install --require-hashes --no-deps`, so a new release on PyPI never changes a fresh install.

    python tools/lock.py check [LOCK]                      # does the lock satisfy every pyproject?
    python tools/lock.py subset LOCK PKG_DIR... [NAME...]  # the lock entries these packages need

`subset` follows the lock's own `# via` annotations from the packages' names, so an image gets
exactly the locked versions of what its packages depend on and nothing else (no pytest, no
scipy in the runner). Pure functions; no network.
"""

from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("shared", "services/runner", "services/host_agent", "services/parser", "services/analyzer",
            "services/scheduler", "tools/kubesim", "tools/nomadsim")
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==([^\s;\\]+)")


def canonicalize_name(name: str) -> str:
    """PEP 503 normalised name (stdlib only: a Dockerfile's build stage runs `subset` with bare python)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Entry:
    name: str
    version: str
    lines: list[str] = field(default_factory=list)
    via: set[str] = field(default_factory=set)


def parse(text: str) -> dict[str, Entry]:
    """Lock entries by canonical name (editable `-e` lines and comments are skipped)."""
    entries: dict[str, Entry] = {}
    current: Entry | None = None
    for line in text.splitlines():
        m = _PIN.match(line)
        if m:
            current = Entry(canonicalize_name(m.group(1)), m.group(3), [line])
            entries[current.name] = entries.get(current.name) or current
            if entries[current.name] is not current:  # the same package twice (per-platform markers)
                entries[current.name].lines.append(line)
                current = entries[current.name]
        elif current is not None and line.startswith("    --hash="):
            current.lines.append(line)
        elif current is not None and line.strip().startswith("# via"):
            names = line.strip().removeprefix("# via").split(",")
            current.via |= {canonicalize_name(n.strip()) for n in names if n.strip() and not n.strip().startswith("-")}
        elif not line.startswith("    "):
            current = None
    return entries


def project_name(pkg_dir: Path) -> str:
    return canonicalize_name(tomllib.loads(_read(pkg_dir / "pyproject.toml"))["project"]["name"])


def problems(lock: dict[str, Entry], pkg_dirs: list[Path]) -> list[str]:
    """Every dependency of every package that the lock misses or pins outside its range."""
    from packaging.markers import default_environment
    from packaging.requirements import Requirement
    from packaging.version import Version

    def project(pkg_dir: Path) -> tuple[str, list[Requirement]]:
        data = tomllib.loads(_read(pkg_dir / "pyproject.toml"))["project"]
        reqs = [Requirement(r) for r in data.get("dependencies", [])]
        for extra in data.get("optional-dependencies", {}).values():
            reqs += [Requirement(r) for r in extra]
        return canonicalize_name(data["name"]), reqs

    local = {project(d)[0] for d in pkg_dirs}
    env = {**default_environment(), "python_version": "3.11", "python_full_version": "3.11.0"}
    out = []
    for d in pkg_dirs:
        name, reqs = project(d)
        for req in reqs:
            dep = canonicalize_name(req.name)
            if dep in local or (req.marker is not None and not req.marker.evaluate({**env, "extra": ""})
                                and "extra" not in str(req.marker)):
                continue
            entry = lock.get(dep)
            if entry is None:
                out.append(f"{name}: {req} is not in the lock (run `make lock`)")
            elif not req.specifier.contains(Version(entry.version), prereleases=True):
                out.append(f"{name}: {req} but the lock pins {dep}=={entry.version} (run `make lock`)")
    return out


def subset(lock: dict[str, Entry], roots: set[str], extras: set[str] = frozenset()) -> list[Entry]:
    """The entries the `roots` packages (and the locked `extras`) need: the closure over `# via`."""
    needed = set(roots) | set(extras)
    changed = True
    while changed:
        changed = False
        for entry in lock.values():
            if entry.name not in needed and entry.via & needed:
                needed.add(entry.name)
                changed = True
    return [e for e in lock.values() if e.name in needed and e.name not in roots]


def _read(path: Path) -> str:
    """A file's text, or SystemExit(2) with one line naming it (a traceback before: hU, session 56)."""
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        print(f"lock.py: cannot read {path} ({why}): give the lock file (requirements.lock) and package folders "
              "holding a pyproject.toml", file=sys.stderr)
        raise SystemExit(2) from None


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("check", "subset"):
        print("usage: lock.py check [LOCK] | lock.py subset LOCK PKG_DIR [PKG_DIR...]", file=sys.stderr)
        return 2
    if argv[0] == "check":
        lock_path = Path(argv[1]) if len(argv) > 1 else ROOT / "requirements.lock"
        found = problems(parse(_read(lock_path)), [ROOT / p for p in PACKAGES if (ROOT / p).is_dir()])
        for p in found:
            print(p, file=sys.stderr)
        return 1 if found else 0
    if len(argv) < 3:
        print("usage: lock.py subset LOCK PKG_DIR [PKG_DIR...]", file=sys.stderr)
        return 2
    lock = parse(_read(Path(argv[1])))
    roots = {project_name(Path(a)) for a in argv[2:] if Path(a).is_dir()}
    extras = {canonicalize_name(a) for a in argv[2:] if not Path(a).is_dir()}  # e.g. setuptools, to build
    missing = extras - lock.keys()
    if missing:
        print(f"not in the lock: {', '.join(sorted(missing))}", file=sys.stderr)
        return 1
    for entry in subset(lock, roots, extras):
        print("\n".join(entry.lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
