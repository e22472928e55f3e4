"""NATS authentication, TLS and per-service subject permissions.

Every service reads its NATS identity from its settings (user/password, an nkey seed file or a
.creds file, and TLS files: see config.Common). Each podtax role may publish only its own event
families, dead letters, its own KV buckets and the JetStream API; everything a service receives
comes through its own inboxes (pull consumers, request replies: inbox_prefix). The host agent runs on
every node, as root: each node's has a user of its own, `host_agent.<node>` (node_user), allowed that
node's subjects and consumers only. `podtax up` writes a nats-server configuration with one user per
role (and its node's agent) and random passwords; deploy/ ships the same permissions, and
`podtax nats-auth node NAME` (cli/natsauth_cmd.py) makes a node's entry.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from podtax import subjects as S
from podtax.config import tls_context

if TYPE_CHECKING:
    from podtax.config import Common


def _family(*prefixes: str) -> list[str]:
    return [p for prefix in prefixes for p in (prefix, f"{prefix}.>")]


def _kv(*buckets: str) -> list[str]:
    return [f"$KV.{b}.>" for b in buckets]


# What each role may publish besides the common part (JetStream API, acks, dead letters, inboxes).
OWN: dict[str, list[str]] = {
    "analyzer": _family(S.SCORE_UPDATED, S.CELL_STATS) + _kv(S.SCORES_BUCKET),
    "parser": _family(S.RUN_RESULT, S.RUN_FAILED),
    "runner": _family(S.RUN_REQUESTED, S.RUN_LOG, S.RUN_RESULT, S.RUN_FAILED) + _kv(S.RUNNER_BUCKET),
    # one node's host runs only ({t}: its escaped name, node_permissions): with the pod side's subjects, one
    # node's agent could forge every node's pod runs; with every node's, another node's host results
    "host_agent": [f"{S.RUN_LOG}.host.{{t}}", f"{S.RUN_FAILED}.host.{{t}}", f"{S.HOST_FACTS}.{{t}}"],
    "scheduler": _family(S.PLACEMENT_MADE),
    # the operator's CLI: campaigns, `podtax import` (raw logs), campaign state (cancel)
    "cli": _family(S.CAMPAIGN_SUBMITTED, S.CAMPAIGN_CANCELLED, S.RUN_LOG) + _kv(S.RUNNER_BUCKET),
}
ROLES = tuple(OWN)
HOST_AGENT = "host_agent"
# The roles whose services share one user; the host agent's users are per node (node_user).
SERVICE_ROLES = tuple(role for role in ROLES if role != HOST_AGENT)
# Who creates each of podtax's streams: its owner alone. On a fresh NATS any role that may create a stream
# could make it first, with subjects, limits or a republish of its choosing (the server publishes what a
# stream republishes or sources, past every subject permission: an audit, as the host agent, made a stream
# on an inbox subject republish into `podtax.run.result...`). The others wait for it (Bus.ensure_streams).
CREATORS: dict[str, str] = {S.STREAM: "runner", S.DLQ_STREAM: "runner", f"KV_{S.RUNNER_BUCKET}": "runner",
                            f"KV_{S.SCORES_BUCKET}": "analyzer"}
STREAMS = tuple(CREATORS)
# The JetStream API a service uses, and no more (creating a stream: CREATORS; restoring one: nobody).
JS_API = ["$JS.API.INFO", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.LIST", "$JS.API.STREAM.INFO.*"]
COMMON_PUBLISH = [*JS_API, "$JS.ACK.>", "$JS.FC.>"]
# Dead letters: of any subject, but the host agent's of the run requests and cancellations it consumes (it could
# otherwise fill the dead letters' stream with forged ones of any service, which push the real ones out: oldest go
# first).
DEAD_LETTERS = {"host_agent": [S.dead_letter(f"{S.RUN_REQUESTED}.host.{{t}}"),
                               S.dead_letter(f"{S.CAMPAIGN_CANCELLED}.*")]}
# How a role may read streams: any consumer, and any message by its sequence or key (KV reads). But the host
# agent runs on every node, and with a consumer of its own on any subject, or a get by sequence, it read every
# campaign, log and result. A node's agent makes, reads and pulls from its own two consumers only ({runs},
# {cancels}: subjects.agent_consumer): of its node's host run requests, and of campaign cancellations (to stop a
# cancelled campaign's run: they hold a campaign's name and the operator's reason; the filter travels in the API
# subject: bus.ConsumerSpec), and gets no message.
READ_API = ["$JS.API.CONSUMER.>", "$JS.API.STREAM.MSG.GET.*", "$JS.API.DIRECT.GET.>"]
ROLE_READ_API = {"host_agent": [f"$JS.API.CONSUMER.CREATE.{S.STREAM}.{{runs}}.{S.RUN_REQUESTED}.host.{{t}}",
                                f"$JS.API.CONSUMER.CREATE.{S.STREAM}.{{cancels}}.{S.CAMPAIGN_CANCELLED}.*",
                                f"$JS.API.CONSUMER.INFO.{S.STREAM}.{{runs}}",
                                f"$JS.API.CONSUMER.INFO.{S.STREAM}.{{cancels}}",
                                f"$JS.API.CONSUMER.MSG.NEXT.{S.STREAM}.{{runs}}",
                                f"$JS.API.CONSUMER.MSG.NEXT.{S.STREAM}.{{cancels}}"]}
# No podtax service removes a stream, a consumer or a message: an audit, logged in as the host agent (whose
# password was on every node), purged the dead letters, cut them to one message by a stream update and deleted
# the parser's consumer, which stopped parsing without a word. Nor does one change a stream: a change can add a
# republish (an audit, as the parser, made the dead letters' stream republish into the scores bucket; the
# runner, which applied the limits, could have made every result copy to a subject of its choosing). A stream
# gets its limits when its owner creates it; changing them later is an operator's `nats stream edit`.
DENY_PUBLISH = ["$JS.API.STREAM.DELETE.>", "$JS.API.STREAM.PURGE.>", "$JS.API.STREAM.MSG.DELETE.>",
                "$JS.API.STREAM.UPDATE.>", "$JS.API.CONSUMER.DELETE.>", "$JS.API.CONSUMER.PAUSE.>",
                "$JS.API.CONSUMER.RESET.>"]
# The durable consumers of the main stream each role owns (bus.ConsumerSpec names; a host agent's are its
# node's alone: ROLE_READ_API). No other role may re-create one (a new filter would unhook it: an audit did
# that to the parser's as the host agent), pull from it or ack its messages (which would take them from
# their service for good): tests/integration/test_nats_auth.py checks the names against the services.
CONSUMERS: dict[str, tuple[str, ...]] = {
    "analyzer": ("analyzer",),
    "parser": ("parser",),
    "runner": ("runner-facts", "runner-campaigns", "runner-cancels", "runner-outcomes", "runner-cells"),
}


def node_user(node: str) -> str:
    """The NATS user of the host agent of `node`: `host_agent.<node>`."""
    S.escape(node)  # an empty name has no user
    return f"{HOST_AGENT}.{node}"


def node_of(user: str | None) -> str | None:
    """The node whose host agent `user` is (node_user), or None."""
    prefix = f"{HOST_AGENT}."
    return user[len(prefix):] if user and user.startswith(prefix) and len(user) > len(prefix) else None


def role_of(user: str | None) -> str | None:
    """The podtax role of a NATS user, or None for a user of no role (the operator's own, or none)."""
    return user if user in OWN else HOST_AGENT if node_of(user) else None


def inbox_prefix(user: str | None) -> str:
    """The inbox prefix of a connection as `user`: each role's own (`_INBOX_<role>`), and each node's agent its
    node's (`_INBOX_host_agent.<node>`), the only subjects it may subscribe to. With one `_INBOX.>` for all, an
    audit, as the host agent, received every event the other services pulled (JetStream delivers to the puller's
    inbox) and could publish into their inboxes."""
    if (node := node_of(user)) is not None:
        return f"_INBOX_{HOST_AGENT}.{S.escape(node)}"
    return f"_INBOX_{user}" if user in OWN else "_INBOX"


def others_consumers(role: str) -> list[str]:
    """Subjects that create, pull from or ack the consumers of roles other than `role`."""
    out = []
    for owner, names in CONSUMERS.items():
        for name in names if owner != role else ():
            api, on = "$JS.API.CONSUMER", f"{S.STREAM}.{name}"
            out += [f"{api}.DURABLE.CREATE.{on}", f"{api}.CREATE.{on}", f"{api}.CREATE.{on}.>",
                    f"{api}.MSG.NEXT.{on}", f"$JS.ACK.{on}.>", f"$JS.ACK.*.*.{on}.>"]
    return out


def permissions(user: str) -> dict[str, Any]:
    """The permissions of a role's user, or of a node's host agent's (node_user: node_permissions)."""
    if (node := node_of(user)) is not None:
        return node_permissions(node)
    if user not in SERVICE_ROLES:
        raise ValueError(f"{user!r} is no podtax role's NATS user (the host agent's are per node: "
                         f"{node_user('<node>')})")
    create = [f"$JS.API.STREAM.CREATE.{name}" for name, owner in CREATORS.items() if owner == user]
    dead = DEAD_LETTERS.get(user, [f"{S.DLQ_PREFIX}.>"])
    return {"publish": {"allow": OWN[user] + COMMON_PUBLISH + dead + ROLE_READ_API.get(user, READ_API) + create,
                        "deny": DENY_PUBLISH + others_consumers(user)},
            "subscribe": {"allow": [f"{inbox_prefix(user)}.>"]}}


def node_permissions(node: str) -> dict[str, Any]:
    """What the host agent of `node` may do: publish its node's host run logs and failures, its host facts and
    dead letters of its run requests and of cancellations; make, read, pull from and ack its own two consumers;
    receive on its own inboxes. With one identity for every node, one node's password (on a host, as root)
    pulled and acked other nodes' run requests and published their host results."""
    names = {"t": S.escape(node), "runs": S.agent_consumer(node), "cancels": S.agent_cancels_consumer(node)}
    fill = [p.format(**names) for p in OWN[HOST_AGENT] + DEAD_LETTERS[HOST_AGENT] + ROLE_READ_API[HOST_AGENT]]
    acks = [f"$JS.ACK{domain}.{S.STREAM}.{names[c]}.>" for c in ("runs", "cancels") for domain in ("", ".*.*")]
    return {"publish": {"allow": fill + JS_API + acks, "deny": DENY_PUBLISH},
            "subscribe": {"allow": [f"{inbox_prefix(node_user(node))}.>"]}}


def _conf_value(value: Any) -> str:
    return json.dumps(value)  # JSON is valid NATS configuration syntax


def authorization_block(passwords: dict[str, str], indent: str = "") -> str:
    """An `authorization { users = [...] }` block: each user (a role's, or a node's agent's: node_user) with its
    permissions.

    A password value starting with `$` is written bare: nats-server then reads it from that
    environment variable (how deploy/ keeps passwords in Secrets)."""
    lines = [f"{indent}authorization {{", f"{indent}  users = ["]
    lines += [user_entry(user, password, indent + "    ") for user, password in passwords.items()]
    lines += [f"{indent}  ]", f"{indent}}}"]
    return "\n".join(lines) + "\n"


def user_entry(user: str, password: str, indent: str = "") -> str:
    """One user of an authorization block's `users` list (authorization_block)."""
    pw = password if password.startswith("$") else _conf_value(password)
    return f"{indent}{{user: {_conf_value(user)}, password: {pw}, permissions: {_conf_value(permissions(user))}}}"


def password_env(user: str) -> str:
    """The environment variable of the NATS server holding `user`'s password in deploy/ (a key of the Secret
    podtax-nats-users, read with the prefix PODTAX_NATS_PASSWORD_): `..._PARSER`, `..._HOST_AGENT_NODE_1`."""
    return "PODTAX_NATS_PASSWORD_" + re.sub("[^A-Z0-9]", "_", user.upper())


def deploy_auth_conf(nodes: Sequence[str] = ()) -> str:
    """deploy/k8s/nats-auth.conf (make docs regenerates it; `podtax nats-auth conf NODE...` adds the nodes' host
    agents): passwords come from the environment. Raises ValueError for two nodes of one password variable."""
    header = ("# NATS users and subject permissions of podtax (generated from shared/src/podtax/natsauth.py by\n"
              "# `make docs`; do not edit). Each password is read from an environment variable of the NATS\n"
              "# container, filled from the Secret podtax-nats-users (see deploy/k8s/README.md).\n")
    if not nodes:
        header += ("# No host agent here: each node's has a user of its own, host_agent.<node>, allowed that node's\n"
                   "# subjects and consumers only. `podtax nats-auth conf NODE...` prints this file with them\n"
                   "# (deploy/host/INSTALL.md, step 3).\n")
    users = [*SERVICE_ROLES, *(node_user(node) for node in nodes)]
    env = {user: password_env(user) for user in users}
    if len(set(env.values())) < len(env):
        same = sorted(u for u in users if list(env.values()).count(env[u]) > 1)
        raise ValueError(f"{', '.join(same)} would share the password variable {env[same[0]]}: rename a node")
    return header + authorization_block({user: f"${var}" for user, var in env.items()})


def connect_options(s: Common) -> dict[str, Any]:
    """nats.connect() keyword arguments for the identity and TLS in these settings."""
    opts: dict[str, Any] = {}
    if s.nats_user:
        opts["user"] = s.nats_user
        opts["password"] = s.nats_password.get_secret_value() if s.nats_password else ""
    if s.nats_creds:
        opts["user_credentials"] = str(s.nats_creds)
    if s.nats_nkey:
        opts["nkeys_seed"] = str(s.nats_nkey)
    if s.nats_tls_ca or s.nats_tls_cert:
        opts["tls"] = tls_context(str(s.nats_tls_ca) if s.nats_tls_ca else None,
                                  str(s.nats_tls_cert) if s.nats_tls_cert else None,
                                  str(s.nats_tls_key) if s.nats_tls_key else None)
    return opts


if __name__ == "__main__":  # pragma: no cover - `make docs`
    print(deploy_auth_conf(), end="")
