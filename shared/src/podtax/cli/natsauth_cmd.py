"""`podtax nats-auth`: NATS users of host agents, one per node (podtax.natsauth.node_user).

Every node's host agent has a NATS user of its own, `host_agent.<node>`, allowed that node's subjects and
consumers only: `node NAME` prints one node's entry and a new random password, `conf NODE...` deploy/k8s's
nats-auth.conf with those nodes' agents (passwords from the NATS server's environment).
"""

from __future__ import annotations

import secrets

import typer

from podtax import natsauth
from podtax.cli.common import node_name

nats_auth_app = typer.Typer(no_args_is_help=True, help="NATS users of the host agents: one per node.")


def node_entry(node: str, password: str | None) -> str:
    """The lines `podtax nats-auth node` prints: how to use them, then the node's user entry. password None: the
    NATS server reads it from its environment (natsauth.password_env), as deploy/k8s does."""
    user = natsauth.node_user(node)
    var = natsauth.password_env(user)
    if password is None:
        secret = secrets.token_urlsafe(24)
        where = (f"# Add the key {var.removeprefix('PODTAX_NATS_PASSWORD_')}={secret} to the Secret podtax-nats-users\n"
                 f"# (the NATS server reads it as ${var}) and this entry to the users of nats-auth.conf.\n")
        entry = natsauth.user_entry(user, f"${var}")
    else:
        secret = password
        where = "# Add this entry to the users of the NATS server's authorization block (nats-auth.conf).\n"
        entry = natsauth.user_entry(user, password)
    return (f"# The NATS user of the host agent on node {node}: it may publish that node's host runs' logs and\n"
            f"# failures and its host facts, and take that node's run requests only.\n{where}"
            f"# In /etc/podtax/host-agent.env on {node} (deploy/host/INSTALL.md, step 3):\n"
            f"#   PODTAX_NATS_USER={user}\n#   PODTAX_NATS_PASSWORD={secret}\n#   PODTAX_AGENT_NODE={node}\n"
            f"{entry}\n")


@nats_auth_app.command("node")
def node(
    name: str = typer.Argument(..., callback=node_name, metavar="NAME",
                               help="the node's name, as `podtax up --node` takes it (PODTAX_AGENT_NODE)"),
    from_env: bool = typer.Option(False, "--from-env",
                                  help="the entry reads the password from the NATS server's environment "
                                       "(deploy/k8s: a key of the Secret podtax-nats-users) instead of holding it"),
) -> int:
    """Print the NATS user of node NAME's host agent, with a new random password."""
    print(node_entry(name, None if from_env else secrets.token_urlsafe(24)), end="")
    return 0


@nats_auth_app.command("conf")
def conf(
    nodes: list[str] = typer.Argument(None, metavar="NODE...",
                                      help="the nodes whose host agents get a user (their names, as Kubernetes's)"),
) -> int:
    """Print deploy/k8s/nats-auth.conf with a user for each NODE's host agent (passwords: `node NAME --from-env`)."""
    for name in nodes or ():
        node_name(name)
    if len(set(nodes or ())) < len(nodes or ()):
        raise typer.BadParameter("a node is named twice", param_hint="NODE...")
    try:
        text = natsauth.deploy_auth_conf(nodes or ())
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="NODE...") from None
    print(text, end="")
    return 0


def register(app: typer.Typer) -> None:
    app.add_typer(nats_auth_app, name="nats-auth")
