"""`podtax campaign status`'s own look at NATS's room (podtax.natsroom): the runner cannot write why a campaign
stalls while the server refuses every write, so the status looks itself and adds it to the `stalled:` line.

The look is a write (the room-probe key of the runner's bucket), made only by a user whose role may write there
(WRITERS) or on a server without users (a connection signed in as no one): a read-only user, or one of no podtax
role (creds, nkey), was refused it with a permissions-violation warning on stderr and an error in the server's log
at every status, and waited 1 s more (review r1 of dd86f35). `--follow` looks once, then only while the campaign's
state has not changed for STILL_POLLS polls (every STILL_POLLS polls then), not at every poll."""

from __future__ import annotations

import contextlib
from typing import Any

from podtax import natsauth, natsroom, subjects
from podtax.bus import Bus

WRITERS = tuple(role for role, own in natsauth.OWN.items() if f"$KV.{subjects.RUNNER_BUCKET}.>" in own)
STILL_POLLS = 5  # `--follow` looks again when the campaign's state has not changed for this many polls


def may_look(bus: Bus) -> bool:
    """Whether this connection may make the look's write: a writer's role, or no user at all (no authorization)."""
    return bus.role in WRITERS or not bus.signed_in


def look_due(polls_still: int) -> bool:
    """Whether a read of the state looks at the room: the first (0), then every STILL_POLLS polls without change."""
    return polls_still % STILL_POLLS == 0


def polls_still(before: dict[str, Any] | None, state: dict[str, Any] | None, polls: int) -> int:
    """How many polls the state has not changed for, `state` read after `before` (`polls` then); the `stalled` line
    the look adds is not a change."""
    def plain(s: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if s is None else {k: v for k, v in s.items() if k != "stalled"}
    return polls + 1 if plain(before) == plain(state) else 1


async def room_said(bus: Bus, state: dict[str, Any] | None) -> dict[str, Any] | None:
    """`state` (a campaign's, None when there is none), its `stalled` reason joined by NATS refusing writes for want
    of room while the campaign runs. A look without answer adds nothing (the state is shown as it is)."""
    if state is None or state.get("finished_at") or not may_look(bus):
        return state
    why = ""
    with contextlib.suppress(Exception):  # NATS slow
        why = await natsroom.refusal(await bus.kv(subjects.RUNNER_BUCKET))
    if why:
        state = {**state, "stalled": "; ".join(dict.fromkeys(w for w in (state.get("stalled"), why) if w))}
    return state
