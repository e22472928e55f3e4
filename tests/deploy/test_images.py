"""Images for every architecture (docker-bake.hcl), Debian pins on both, and the compose path."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.deploy._util import REPO

sys.path.insert(0, str(REPO / "tools"))
import check_debian_pins  # noqa: E402
import compose_test  # noqa: E402

BAKE = (REPO / "docker-bake.hcl").read_text()


def test_bake_builds_every_dockerfile_for_amd64_and_arm64() -> None:
    dockerfiles = {str(p.relative_to(REPO)) for p in REPO.glob("services/*/Dockerfile")}
    dockerfiles.add("deploy/bench-image/Dockerfile")
    in_bake = set(re.findall(r'dockerfile\s*=\s*"([^"]+)"', BAKE))
    assert in_bake == dockerfiles
    assert re.search(r'default\s*=\s*"linux/amd64,linux/arm64"', BAKE)
    targets = set(re.findall(r'^target "([a-z-]+)"', BAKE, re.M)) - {"_common"}
    group = re.search(r'group "default" \{\s*targets\s*=\s*\[([^\]]*)\]', BAKE)
    assert group and set(re.findall(r'"([a-z-]+)"', group.group(1))) == targets


def test_debian_pins_are_read_from_both_dockerfiles_and_agree() -> None:
    pins = check_debian_pins.pins()
    assert set(pins) == {"sysbench", "stress-ng", "fio", "hdparm", "iperf3", "sockperf", "python3"}


def test_versions_index_parser() -> None:
    index = "Package: fio\nVersion: 3.33-3\nArchitecture: arm64\n\nPackage: fio\nVersion: 3.33-4\n\nPackage: x\n"
    assert check_debian_pins.versions(index) == {"fio": {"3.33-3", "3.33-4"}}


def test_pinned_debian_packages_exist_for_amd64_and_arm64(capsys) -> None:
    # reads Debian's package indexes (deb.debian.org is one of the registries this project may use)
    assert check_debian_pins.main([]) == 0
    out = capsys.readouterr().out
    assert out.count("ok ") == 14 and "MISSING" not in out  # 7 packages x 2 architectures


def test_compose_file_validates_against_the_compose_specification() -> None:
    tool = Path(sys.executable).with_name("check-jsonschema")
    proc = subprocess.run([str(tool), "--builtin-schema", "vendor.compose-spec", str(REPO / "docker-compose.yml")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_compose_spec_check_catches_a_broken_file(tmp_path: Path) -> None:
    broken = tmp_path / "compose.yml"
    broken.write_text("services:\n  nats:\n    image: nats\n    restart: sometimes-maybe\n    ports: 4222\n")
    tool = Path(sys.executable).with_name("check-jsonschema")
    proc = subprocess.run([str(tool), "--builtin-schema", "vendor.compose-spec", str(broken)],
                          capture_output=True, text=True)
    assert proc.returncode != 0


def test_compose_test_says_when_no_engine_runs(capsys) -> None:
    problem = compose_test.engine_problem()
    if problem is None:  # a machine with Docker: `make compose-test` runs the real thing there
        return
    assert compose_test.main([]) == 1
    err = capsys.readouterr().err
    assert problem in err and "Docker engine" in err
