"""The host agent's own directories (podtax_host_agent.owndir): made 0700 whatever the umask, what existed left
alone, and links refused rather than followed."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from podtax_host_agent import owndir


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_made_directories_are_0700_whatever_the_umask_and_existing_ones_are_left_alone(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    old = os.umask(0o002)
    try:
        owndir.make(shared / "podtax" / ".state")
    finally:
        os.umask(old)
    assert [_mode(p) for p in (shared, shared / "podtax", shared / "podtax" / ".state")] == [0o755, 0o700, 0o700]
    assert owndir.problem(shared / "podtax") is None and owndir.problem(shared / "podtax" / ".state") is None


def test_a_link_is_refused_even_to_a_directory_of_this_user_alone(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    owndir.make(link)  # there already: not followed, not changed
    assert owndir.problem(link) == f"{link} is a symbolic link; name the directory itself"
    real.chmod(0o777)
    assert owndir.problem(real) == f"{real} is writable by others (mode 777); chmod 0700 it"
