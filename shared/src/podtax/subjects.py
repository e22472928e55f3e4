"""NATS subjects, streams and KV buckets: `podtax.<family>.<verb>[.<env>.<node>]`.

Node names may contain dots (``node-1.example.com``); a dot would split a subject token, so
tokens are escaped (`.` -> `~2E`, and the other characters NATS reserves likewise). The
real name always travels in the payload.
"""

from __future__ import annotations

import hashlib
import re

CAMPAIGN_SUBMITTED = "podtax.campaign.submitted"
CAMPAIGN_CANCELLED = "podtax.campaign.cancelled"
RUN_REQUESTED = "podtax.run.requested"
RUN_LOG = "podtax.run.log"
RUN_RESULT = "podtax.run.result"
RUN_FAILED = "podtax.run.failed"
HOST_FACTS = "podtax.host.facts"
CELL_STATS = "podtax.cell.stats"
SCORE_UPDATED = "podtax.score.updated"
PLACEMENT_MADE = "podtax.placement.made"

# Streams: name -> subjects. Dead letters live apart so a replay of the main stream skips them.
STREAM = "PODTAX"
STREAM_SUBJECTS = ["podtax.>"]
DLQ_STREAM = "PODTAX_DLQ"
DLQ_PREFIX = "podtaxdlq"
DLQ_SUBJECTS = [f"{DLQ_PREFIX}.>"]



def stream_of(subject: str) -> str:
    """The stream podtax makes for `subject` (STREAM, DLQ_STREAM, KV_<bucket> for a KV put), else the subject itself:
    the publishes of a batch left unanswered are asked after once per stream (buspipeline.Pipeline.acks)."""
    head, _, rest = subject.partition(".")
    if head == "$KV":
        return f"KV_{rest.partition('.')[0]}"
    return {"podtax": STREAM, DLQ_PREFIX: DLQ_STREAM}.get(head, subject)


SCORES_BUCKET = "podtax_scores"
RUNNER_BUCKET = "podtax_runner"

_ESCAPES = {"~": "~7E", ".": "~2E", "*": "~2A", ">": "~3E", " ": "~20", "\t": "~09"}


_NEEDS_ESCAPE = re.compile("[" + re.escape("".join(_ESCAPES)) + "]")


def escape(token: str) -> str:
    """Make any string safe as one subject token or KV key segment (reversible)."""
    if not token:
        raise ValueError("an empty name cannot be a subject token")
    if not _NEEDS_ESCAPE.search(token):  # the common case (every event's node name): one regex scan
        return token
    return "".join(_ESCAPES.get(ch, ch) for ch in token)


def unescape(token: str) -> str:
    out = token
    for ch, esc in sorted(_ESCAPES.items(), key=lambda kv: kv[0] == "~"):
        out = out.replace(esc, ch)
    return out


def join(prefix: str, *tokens: str) -> str:
    return ".".join([prefix, *(escape(t) for t in tokens)])


def dead_letter(subject: str) -> str:
    return f"{DLQ_PREFIX}.{subject}"


def agent_consumer(node: str) -> str:
    """The durable consumer of a node's host run requests: `host-agent-<node>` (its escaped token)."""
    return f"host-agent-{escape(node)}"


def agent_cancels_consumer(node: str) -> str:
    """A node's host agent's consumer of campaign cancellations: `host-agent-<node>~cancels`. The `~` cannot
    follow an escaped node name but as `~XX`, so no node's name is another's consumer's (with `-cancels`, node
    `a`'s was node `a-cancels`'s run requests' consumer, and a node's identity may pull from its own)."""
    return f"host-agent-{escape(node)}~cancels"


def kv_token(name: str) -> str:
    """Make any string one KV key segment: JetStream KV keys allow only [-/_=.A-Za-z0-9], and the dot
    separates segments, so every other character becomes `=XX` (its UTF-8 bytes in hex)."""
    if not name:
        raise ValueError("an empty name cannot be a KV key segment")
    return "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_") else
                   "".join(f"={b:02X}" for b in ch.encode()) for ch in name)


def node_key(node: str) -> str:
    """KV key (bucket RUNNER_BUCKET) of a node's facts, merged by the runner and read by the CLI."""
    return f"node.{kv_token(node)}"


def score_key(cluster: str, env: str, node: str, test: str, metric: str, params_key: str) -> str:
    """KV key of a node score: `<cluster>.<env>.<node>.<test>.<metric>.<params hash>`."""
    digest = hashlib.sha1(params_key.encode()).hexdigest()[:12]
    return ".".join([kv_token(cluster), env, kv_token(node), kv_token(test), kv_token(metric), digest])
