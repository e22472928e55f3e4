"""Directories for the agent's user alone: its work directory (fio's data file) and its state.

The agent (root on real nodes) writes in them at fixed names, through any symbolic link it finds there: fio into
a file at least the run's size or a disk, the agent its run record and outbox. A directory another user owns,
may write to or reaches through a link of theirs (the default /var/tmp/podtax: anyone may create it first) would
let that user choose what gets overwritten. So the agent makes both at start with mode 0700 whatever the umask,
then checks them (:func:`problem`), and the work directory again before every fio run.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from podtax.config import ConfigError, HostAgentSettings


def make(path: Path) -> None:
    """Make `path` and its missing parents, each mode 0700 (set explicitly: the umask may not allow it)."""
    for folder in reversed([p for p in (path, *path.parents) if not os.path.lexists(p)]):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            continue  # made meanwhile by someone else: problem() judges it
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)  # never chmod through a link
        try:
            os.fchmod(fd, 0o700)
        finally:
            os.close(fd)


def problem(path: Path) -> str | None:
    """Why `path` is not a directory of this user's that no one else may write to, or None. A symbolic link is
    refused (not followed): its owner may point it elsewhere."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return f"{path} does not exist"
    me = os.geteuid()
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symbolic link; name the directory itself"
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a folder; name a folder"
    if st.st_uid != me:
        return f"{path} belongs to uid {st.st_uid}, not to this agent's user (uid {me}); chown it to uid {me}"
    if st.st_mode & 0o022:
        return f"{path} is writable by others (mode {stat.S_IMODE(st.st_mode):o}); chmod 0700 it"
    return None


def recheck(path: Path) -> str | None:
    """`problem` again, before the agent writes there once more: a directory removed since (tmpfiles ages /var/tmp)
    is made again, for this user alone; one that became another user's, or anyone's, is named."""
    with contextlib.suppress(OSError):  # one that cannot be made: problem() says so
        make(path)
    return problem(path)


def state_dir(settings: HostAgentSettings) -> Path:
    return settings.agent_state_dir or settings.agent_workdir / ".state"


def prepare(settings: HostAgentSettings) -> None:
    """At start, before NATS: make the work and state directories and check them; raises ConfigError (exit 2)
    naming the variable when one is unsafe or cannot be made."""
    lines = []
    if ":" in str(settings.agent_workdir):  # --filename=/a:b/podtax-fio.dat: fio writes /a and b/podtax-fio.dat
        lines.append(f"PODTAX_AGENT_WORKDIR: {settings.agent_workdir} holds a ':', which fio reads as a list of "
                     f"files (it would write beside the folder); name another folder")
    for variable, path in (("PODTAX_AGENT_WORKDIR", settings.agent_workdir),
                           ("PODTAX_AGENT_STATE_DIR", state_dir(settings))):
        try:
            make(path)
        except OSError as exc:
            lines.append(f"{variable}: {path} cannot be made ({exc.strerror}); name another folder")
            continue
        if why := problem(path):
            lines.append(f"{variable}: {why}, or name another folder: another user could put links there that "
                         f"the agent writes through")
    if lines:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines), lines)
