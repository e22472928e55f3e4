"""`podtax campaign status`'s own look at NATS's room (podtax.natsroom): the runner cannot write why a campaign
stalls while the server refuses every write, so the status looks itself and adds it to the `stalled:` line."""

from __future__ import annotations

import contextlib
from typing import Any

from podtax import natsauth, natsroom, subjects
from podtax.bus import Bus

WRITERS = tuple(role for role, own in natsauth.OWN.items() if f"$KV.{subjects.RUNNER_BUCKET}.>" in own)


async def room_said(bus: Bus, state: dict[str, Any] | None) -> dict[str, Any] | None:
    """`state` (a campaign's, None when there is none), its `stalled` reason joined by NATS refusing writes for want
    of room while the campaign runs. A look without answer adds nothing (the state is shown as it is)."""
    if state is None or state.get("finished_at") or bus.role not in (None, *WRITERS):  # (a user not allowed to
        return state  # write there would be refused, said by nats-py in a warning)
    why = ""
    with contextlib.suppress(Exception):  # NATS slow, or this user may not write the runner's bucket
        why = await natsroom.refusal(await bus.kv(subjects.RUNNER_BUCKET))
    if why:
        state["stalled"] = "; ".join(dict.fromkeys(w for w in (state.get("stalled"), why) if w))
    return state
