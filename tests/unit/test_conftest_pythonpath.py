"""tests/conftest.absolute_pythonpath: a child started in another folder imports what this one's PYTHONPATH names
(review hR5 F5: an empty entry, which Python reads as the current folder, was dropped)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import absolute_pythonpath


def test_each_entry_is_made_absolute_and_an_empty_one_is_the_current_folder() -> None:
    cwd = Path.cwd()
    value = os.pathsep.join(["", "shared/src", str(cwd / "x")])
    assert absolute_pythonpath(value) == os.pathsep.join([str(cwd), str(cwd / "shared/src"), str(cwd / "x")])
    assert absolute_pythonpath("") == str(cwd)
