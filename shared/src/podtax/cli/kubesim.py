"""`podtax kubesim`: serve a SIMULATED Kubernetes API (the podtax-kubesim package) for tests and demos."""

from __future__ import annotations

from pathlib import Path

import typer

from podtax.cli.common import a_path, fail
from podtax.cli.delegate import run_module

INSTALL_HINT = "podtax kubesim needs the podtax-kubesim package: pip install -e tools/kubesim"


def register(app: typer.Typer) -> None:
    @app.command("kubesim")
    def kubesim(
        cluster: Path = typer.Option(None, "--cluster", parser=a_path, metavar="<path>",
                                     help="cluster file (YAML): nodes, storage classes"),
        kubeconfig: Path = typer.Option(Path("kubesim.kubeconfig"), "--kubeconfig", parser=a_path, metavar="<path>",
                                        help="where to write a kubeconfig for the emulator"),
        port: int = typer.Option(0, "--port", min=0, max=65535, help="port (0: a free one)"),
        host: str = typer.Option("127.0.0.1", "--host", help="address to listen on (the exec kubelet: loopback only)"),
        kubelet: str = typer.Option("simulated", "--kubelet",
                                    help="simulated | exec (run container commands locally) | none"),
        workdir: Path = typer.Option(None, "--workdir", parser=a_path, metavar="<path>",
                                     help="with --kubelet exec: working directories of its containers"),
        allow_privileged: bool = typer.Option(False, "--allow-privileged",
                                              help="admit hostPath, privileged and host-namespace pods"),
        pod_network: bool = typer.Option(False, "--pod-network",
                                         help="exec kubelet: a network namespace, veth pair, bridge and an address "
                                              "from 198.18.0.0/15 per pod (root only)"),
    ) -> int:
        """Run a local, SIMULATED Kubernetes API server (not a real cluster) until interrupted."""
        if kubelet not in ("simulated", "exec", "none"):
            raise typer.BadParameter(f"{kubelet!r} is not one of simulated, exec, none", param_hint="--kubelet")
        if workdir is not None and kubelet != "exec":
            raise fail("--workdir is where the exec kubelet runs containers: add --kubelet exec (or drop --workdir)",
                       2)
        argv = ["--kubeconfig", str(kubeconfig), "--port", str(port), "--host", host, "--kubelet", kubelet]
        if cluster is not None:
            argv += ["--cluster", str(cluster)]
        if workdir is not None:
            argv += ["--workdir", str(workdir)]
        if allow_privileged:
            argv.append("--allow-privileged")
        if pod_network:
            argv.append("--pod-network")
        code = run_module("podtax_kubesim", argv, INSTALL_HINT)  # its own process: the library imports no tool
        if code:
            raise typer.Exit(code)
        return 0
