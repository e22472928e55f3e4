"""What a Ctrl-C says: one line, `interrupted: <what was done / what to do>` on stderr, exit 130, said by the app
runner (main.run_app) for every command. Typer turned a Ctrl-C into exit 130 without a word, so only the commands
that caught it themselves (`podtax import`, `campaign status --follow`) said anything. A command whose Ctrl-C leaves
something to say of (rows published so far, a campaign that goes on) notes it here as it stops; any other command
is said to have stopped before it finished."""

from __future__ import annotations

import signal
import threading

_notes: list[str] = []


class Interrupted(Exception):  # noqa: N818 - what happened, not an error of the program
    """A Ctrl-C (KeyboardInterrupt) out of a command, past typer (which makes it a silent exit 130). Made, it ignores
    SIGINT until said() (main thread): a second one cut the line short with a traceback, 1 run of 3 under `podtax
    simulate`, whose child gets the terminal's Ctrl-C and the one delegate forwards."""

    def __init__(self) -> None:
        super().__init__()
        self.handler = (signal.signal(signal.SIGINT, signal.SIG_IGN)
                        if threading.current_thread() is threading.main_thread() else None)

    def said(self) -> None:
        """SIGINT handled as before."""
        if self.handler is not None:
            signal.signal(signal.SIGINT, self.handler)


def note(what: str) -> None:
    """Say `what` (what the command did, what to do now) when the Ctrl-C that is stopping it reaches the runner."""
    _notes.append(what)


def what(command: str) -> str:
    """What to say of a Ctrl-C out of `command` (`podtax report`): the last note, else that it stopped unfinished."""
    said = _notes[-1] if _notes else f"`{command}` stopped before it finished; run it again to finish it"
    _notes.clear()
    return said
