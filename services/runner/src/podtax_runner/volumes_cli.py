"""`podtax volumes cleanup`: find and remove what control-plane runs (volume-churn, pod-startup) left
behind: Kubernetes claims and pods labelled `podtax.io/kind=control-plane` (and the PVs of those
claims), Nomad CSI volumes named `podtax-<campaign>-<run>-<nnnn>`. Prints each object it removed.
Where: the options, else the runner's settings, else what a running `podtax up` started (up.json,
as other commands find its NATS), else the clients' own defaults.

It lives in the runner package (the executor's own clean-up code) and runs as `python -m
podtax_runner volumes ...`, which `podtax volumes` calls: the podtax library imports no service."""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from podtax import config as podtax_config
from podtax.cli.common import a_path, campaign_name, from_up, not_a_file
from podtax.kubeclient import load_config
from podtax.oneline_args import one_line

if TYPE_CHECKING:
    from podtax_runner.controlplane.nomad import NomadConfig

BACKENDS = ("kubernetes", "nomad")
NAMESPACE = re.compile(r"[A-Za-z0-9-]{1,128}")  # Nomad's namespace names; Kubernetes' (lowercase, <= 63) are among them
MAX_KUBECONFIG_BYTES = 4 * 1024 * 1024  # a kubeconfig is a few kB; its YAML loader took minutes over a 50 MB file


def namespace_name(value: str | None) -> str | None:
    """--namespace as typed (typer's `callback=`): an empty one (`--namespace "$NS"` with NS unset) cleaned EVERY
    namespace, as if none was given; that, and a name no namespace can have, is a usage mistake (exit 2)."""
    if value is not None and not NAMESPACE.fullmatch(value):
        raise typer.BadParameter(f"{value!r} is not a namespace name (letters, digits and '-', as Kubernetes and "
                                 f"Nomad name them); drop --namespace to clean every namespace")
    return value


FIX = {"kubernetes": "pass --kubeconfig FILE (or set PODTAX_RUNNER_KUBECONFIG)",
       "nomad": "pass --nomad-addr URL (or set PODTAX_RUNNER_NOMAD_ADDR)"}


def _kubeconfig(kubeconfig: Path | None) -> Path | None:
    """The kubeconfig to use: the option, PODTAX_RUNNER_KUBECONFIG, the running `podtax up`'s, else None
    (in-cluster, or the client's default)."""
    found = os.environ.get("PODTAX_RUNNER_KUBECONFIG") or from_up("kubeconfig")
    return kubeconfig or (Path(found) if found else None)


def _kubernetes_where(kubeconfig: Path | None) -> str:
    path = _kubeconfig(kubeconfig)
    if path is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        return "in-cluster"
    return str(path or os.environ.get("KUBECONFIG") or "~/.kube/config")


def _kubernetes(kubeconfig: Path | None, namespace: str | None, campaign: str | None) -> tuple[list[str], int, int]:
    from kubernetes import client, config

    from podtax_runner.controlplane import cleanup, common
    from podtax_runner.controlplane.kubeapi import Kube, api_client

    cfg = client.Configuration()
    path = _kubeconfig(kubeconfig)
    named = "--kubeconfig" if kubeconfig else "PODTAX_RUNNER_KUBECONFIG" if os.environ.get(
        "PODTAX_RUNNER_KUBECONFIG") else None
    if named:  # a file the user named that is no kubeconfig: one line naming it, exit 2 (it was exit 1, 'TypeError')
        load_config(cfg, path, named)
    elif path is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config(client_configuration=cfg)
    else:
        config.load_kube_config(config_file=str(path) if path else None, client_configuration=cfg)
    removed = cleanup.kubernetes(Kube(api_client(cfg)), namespace, common.selector(campaign), wait_s=60)
    for line in removed.remaining:  # each PV that stayed, and why
        typer.echo(f"still present: {line}", err=True)
    for line in removed.unlisted:  # each list that got no answer, and what it left
        typer.echo(f"not cleaned: {line}", err=True)
    _again("kubernetes", [*removed.remaining, *removed.unlisted], namespace, campaign)
    return removed.names, removed.left, len(removed.unlisted)


def _again(name: str, said: list[str], namespace: str | None, campaign: str | None) -> None:
    """After what stayed was said (each with why), the command that removes it once that is mended: this one again,
    unless the lines name their own (a PV of an unknown campaign names one without --campaign)."""
    if not said or any("`podtax volumes cleanup" in line for line in said):
        return
    again = f"podtax volumes cleanup --backend {name}" + (f" --campaign {campaign}" if campaign else "") \
        + (f" --namespace {namespace}" if namespace else "")
    typer.echo(f"{name}: not everything was removed (said above, with why): once that is mended, run `{again}` "
               "again", err=True)


def _nomad_config(address: str | None) -> NomadConfig:
    """The option, PODTAX_RUNNER_NOMAD_ADDR, the running `podtax up`'s nomadsim, NOMAD_ADDR, the default."""
    from podtax_runner.controlplane import nomad

    cfg = nomad.NomadConfig.from_settings(podtax_config.load(podtax_config.RunnerSettings))
    if not address and "PODTAX_RUNNER_NOMAD_ADDR" not in os.environ:
        address = from_up("nomad_addr") or os.environ.get("NOMAD_ADDR")
    return dataclasses.replace(cfg, address=address or cfg.address, token=cfg.token or os.environ.get("NOMAD_TOKEN"))


def _nomad(address: str | None, namespace: str | None, campaign: str | None) -> tuple[list[str], int, int]:
    from podtax_runner.controlplane import nomad

    client = nomad.Nomad(_nomad_config(address))
    try:
        # every namespace unless one is named, as on Kubernetes (an audit: a killed run's 38 volumes in namespace
        # `batch` were not found by `podtax volumes cleanup --backend nomad`, which said "removed 0")
        removed = nomad.cleanup(client, campaign, None, namespace or "*", wait_s=60)
    finally:
        client.close()
    for line in removed.remaining:  # each volume that stayed, and why
        typer.echo(f"still present: {line}", err=True)
    _again("nomad", removed.remaining, namespace, campaign)
    return removed.names, removed.left, 0


def _configured(name: str, kubeconfig: Path | None, nomad_addr: str | None) -> bool:
    """Whether anything names this backend: an option, the runner's variable, a running `podtax up`, or the client's
    own (Kubernetes: in-cluster, KUBECONFIG, ~/.kube/config; Nomad: NOMAD_ADDR). One nothing names is tried at the
    client's default all the same, but failing there is no failure of the cleanup (a Kubernetes-only site)."""
    if name == "kubernetes":
        return bool(_kubeconfig(kubeconfig) or os.environ.get("KUBERNETES_SERVICE_HOST")
                    or os.environ.get("KUBECONFIG") or Path("~/.kube/config").expanduser().exists())
    return bool(nomad_addr or os.environ.get("PODTAX_RUNNER_NOMAD_ADDR") or from_up("nomad_addr")
                or os.environ.get("NOMAD_ADDR"))


def _problem(name: str, where: str, exc: Exception) -> str:
    """One line: the backend, where it was looked for, what went wrong and the options that point elsewhere."""
    from podtax_runner.controlplane.apierrors import Unreachable

    if isinstance(exc, Unreachable):  # its connection's error: the line names the address already
        return f"could not clean up {name} ({where}): {exc.cause}; {FIX[name]}"
    detail = str(exc).strip().splitlines()[0].rstrip(".") if str(exc).strip() else ""
    return f"could not clean up {name} ({where}): {type(exc).__name__}: {detail}; {FIX[name]}"


def _too_big(path: Path) -> str | None:
    try:
        size = path.stat().st_size
    except OSError:  # gone since not_a_file: the loader says so
        return None
    return (f"holds {size:,} bytes, more than a kubeconfig ({MAX_KUBECONFIG_BYTES:,} at most): keep the context "
            f"to clean, e.g. kubectl config view --minify --flatten --context <ctx> > one.kubeconfig, and give "
            f"that") if size > MAX_KUBECONFIG_BYTES else None


volumes = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                      help="Volumes and pods of control-plane runs.")


@volumes.callback()
def _group() -> None:
    """Volumes and pods of control-plane runs."""  # a group even with one command: `podtax volumes cleanup`


def main(argv: list[str]) -> int:
    """`podtax volumes ...` (argv without `volumes`): one-line usage errors, exit 2."""
    from podtax.cli.main import run_app

    return run_app(volumes, argv, "podtax volumes")


@volumes.command("cleanup")
def cleanup_cmd(
    backend: str = typer.Option(None, "--backend", help="kubernetes or nomad (default: both)"),
    campaign: str = typer.Option(None, "--campaign", help="only what this campaign created", callback=campaign_name),
    namespace: str = typer.Option(None, "--namespace", callback=namespace_name,
                                  help="Kubernetes or Nomad namespace (default: all of them)"),
    kubeconfig: Path = typer.Option(None, "--kubeconfig", parser=a_path, metavar="<path>",
                                    help="kubernetes backend; default: "
                                    "PODTAX_RUNNER_KUBECONFIG, the kubesim a running `podtax up` started (its "
                                    "up.json), in-cluster, or ~/.kube/config"),
    nomad_addr: str = typer.Option(None, "--nomad-addr", help="nomad backend; default: PODTAX_RUNNER_NOMAD_ADDR, "
                                   "the nomadsim a running `podtax up` started (its up.json), or NOMAD_ADDR"),
) -> int:
    """Remove leftovers of control-plane runs and print what was removed.

    Exit status: 0 when every backend reached was clean; 1 when anything stays, or a backend it was pointed at could
    not be reached or cleaned (one line each; without --backend, a backend nothing configures is said but not counted,
    unless neither could be cleaned); 2 for a usage mistake."""
    if backend is not None and backend not in BACKENDS:
        raise typer.BadParameter(f"{backend!r} is not one of {', '.join(BACKENDS)}", param_hint="--backend")
    for option, value, its in (("--kubeconfig", kubeconfig, "kubernetes"), ("--nomad-addr", nomad_addr, "nomad")):
        if value is not None and backend not in (None, its):
            typer.echo(f"podtax volumes cleanup: {option} is for the {its} backend, and --backend {backend} "
                       f"cleans only {backend}: drop {option} or --backend", err=True)
            raise typer.Exit(2)
    if kubeconfig is not None and (problem := not_a_file(kubeconfig) or _too_big(kubeconfig)):  # usage: exit 2
        typer.echo(f"podtax volumes cleanup: --kubeconfig {one_line(str(kubeconfig))}: {problem}; give a kubeconfig "
                   "file", err=True)
        raise typer.Exit(2)
    if nomad_addr is not None and not nomad_addr.startswith(("http://", "https://")):
        typer.echo(f"podtax volumes cleanup: --nomad-addr {nomad_addr!r} is not an http(s) URL, such as "
                   f"http://127.0.0.1:4646", err=True)
        raise typer.Exit(2)
    logging.getLogger("podtax.runner.retry").setLevel(logging.ERROR)  # a failure is said once, below
    left, problems = 0, []  # problems: (its line, whether it counts in the exit status)
    for name in [backend] if backend else list(BACKENDS):
        try:
            names, still, unlisted = (_kubernetes(kubeconfig, namespace, campaign) if name == "kubernetes"
                            else _nomad(nomad_addr, namespace, campaign))
        except Exception as exc:  # noqa: BLE001 - unreachable backend, bad kubeconfig ...: said, not a traceback
            where = _kubernetes_where(kubeconfig) if name == "kubernetes" else _nomad_config(nomad_addr).address
            counted = backend is not None or _configured(name, kubeconfig, nomad_addr)
            problems.append((_problem(name, where if counted else f"{where}: the default, none configured", exc),
                             counted))
            continue
        for line in names:
            typer.echo(f"removed {line}")
        typer.echo(f"{name}: removed {len(names)} object(s)" + (f", {still} still present" if still else "")
                   + (f", {unlisted} list(s) not answered in time: not everything was cleaned" if unlisted else ""))
        left += still + unlisted
    for problem, _ in problems:
        typer.echo(problem, err=True)
    # a backend that was named and could not be cleaned may keep objects (it was exit 0 beside a clean one); one
    # nothing names is not counted, unless no backend could be cleaned at all
    if any(counted for _, counted in problems) or len(problems) == len(BACKENDS) or left:
        raise typer.Exit(1)
    return 0
