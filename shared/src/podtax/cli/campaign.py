"""`podtax campaign submit FILE`, `podtax campaign status NAME [--follow]`, `podtax campaign cancel NAME`."""

from __future__ import annotations

import asyncio
import math
import os
import re
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn

from podtax import campaign as campaign_file
from podtax import events, k8s_syntax, netbench, subjects, telemetry, templates
from podtax.bus import Bus, BusError
from podtax.cli import deadline as cli_deadline
from podtax.cli import interrupted
from podtax.cli.common import a_path, campaign_name, console, err, fail, from_up, refused, say, warn
from podtax.cli.earlier import check_analyzer, last_submission, publish_once, refusal_of, unplanned
from podtax.cli.failed_runs import why_failed
from podtax.cli.missing_tools import tool_problems
from podtax.cli.progress_rows import progress_info, progress_rows
from podtax.cli.room import look_due, polls_still, room_said

campaign_app = typer.Typer(no_args_is_help=True, help="Submit campaigns and follow their progress.")
RUNS_FAILED = 3  # `--follow`'s exit status for a campaign that finished with failed runs
FOLLOW_S = 86400.0  # how long `--follow` waits unless --timeout says otherwise
FOLLOW_HELP = ("Show progress until the campaign finishes. Exit status: 0 when every run succeeded or was "
               f"cancelled, {RUNS_FAILED} when any run failed, 1 when --timeout ran out.")
SUBMIT_FOLLOW_HELP = FOLLOW_HELP.replace("when --timeout ran out.", "when it has not finished after 24 hours "
                                         "(`podtax campaign status NAME --follow --timeout S` waits another time).")


def _seconds(value: float | None) -> float | None:
    if value is not None and not (math.isfinite(value) and 0 <= value <= FOLLOW_S):
        raise typer.BadParameter(f"{value} is not a number of seconds between 0 and {FOLLOW_S:.0f}")
    return value


async def _kv_get(bus: Bus, key: str) -> dict[str, Any] | None:
    return await Bus.kv_json(await bus.kv(subjects.RUNNER_BUCKET), key)


async def _known_nodes(bus: Bus) -> dict[str, dict[str, Any]]:
    kv = await bus.kv(subjects.RUNNER_BUCKET)
    return {doc["node"]: doc for doc in await Bus.kv_json_all(kv, "node.")}


def check_nodes(c: campaign_file.Campaign, known: dict[str, dict[str, Any]]) -> list[str]:
    """Problems that must stop a submission: unknown nodes, host runs on a node without an agent."""
    problems = []
    if isinstance(c.nodes, list):
        for node in c.nodes:
            doc = known.get(node)
            if doc is None:
                names = ", ".join(sorted(known)) or "none yet"
                problems.append(f"unknown node {node!r}: no host agent or Kubernetes node by that name "
                                f"(known: {names})")
            elif "host" in c.environments and not doc.get("host_agent"):
                problems.append(f"node {node!r} has no host agent reporting, but the campaign has host runs")
            elif "kubernetes" in c.environments and not doc.get("kubernetes"):
                problems.append(f"node {node!r} is not a Kubernetes node known to the runner, "
                                f"but the campaign has pod runs")
            else:
                problems += tool_problems(c, node, known)
    elif not _selected(c.nodes.selector, known):
        names = ", ".join(sorted(known)) or "none yet"
        problems.append(f"selector {c.nodes.selector} matches no node (known: {names})")
    return problems + _across_nodes_problems(c, known)


def _across_nodes_problems(c: campaign_file.Campaign, known: dict[str, dict[str, Any]]) -> list[str]:
    """A pod->pod-across-nodes run puts its server pod on a second Kubernetes node: with fewer than two
    known, every such run would fail."""
    kube = sorted(name for name, doc in known.items() if doc.get("kubernetes"))
    if "kubernetes" not in c.environments or len(kube) >= 2:
        return []
    return [f"tests.{i}: {t.test} with topology pod->pod-across-nodes needs a second Kubernetes node for its "
            f"server, and the runner knows {len(kube)} ({', '.join(kube) or 'none'}): use pod->pod, or add a node"
            for i, t in enumerate(c.tests)
            if any(combo.get("topology") == "pod->pod-across-nodes" for combo in t.combinations())]


def _pod_network_problems(c: campaign_file.Campaign) -> list[str]:
    """The local `podtax up` this CLI talks to runs pods in the host's network (exec kubelet without
    --pod-network, its up.json says): a network test's client pod cannot reach its server pod's made-up
    address and hangs until the run's timeout (pod->host would measure the host's own network)."""
    net = [(i, t) for i, t in enumerate(c.tests) if t.test in netbench.NET_TESTS]
    if not net or "kubernetes" not in c.environments or from_up("pod_network") != "host":
        return []
    up_nats = from_up("nats_url")
    if os.environ.get("PODTAX_NATS_URL", up_nats) != up_nats:  # another NATS: not that podtax up's runner
        return []
    return [f"tests.{i}: {t.test}'s pod runs need pods with a network of their own, and the local `podtax up` runs "
            f"its pods in this host's network (started without --pod-network): each would hang until its timeout; "
            f"restart it with `podtax up --exec-kubelet --pod-network` (as root), or run {t.test} on host only"
            for i, t in net]


def _selected(selector: str, known: dict[str, dict[str, Any]]) -> bool:
    """Whether `selector` matches a known Kubernetes node; True when a node's labels were not recorded
    (a runner older than this check): then only the runner can tell."""
    kube = [doc for doc in known.values() if doc.get("kubernetes")]
    if any("labels" not in doc for doc in kube):
        return True
    return any(k8s_syntax.selector_matches(selector, doc["labels"]) for doc in kube)


def build_warnings(c: campaign_file.Campaign, known: dict[str, dict[str, Any]],
                   image: dict[str, Any] | None) -> list[str]:
    """Warn before anything runs when the hosts' tool builds differ from the benchmark image's."""
    if "host" not in c.environments or "kubernetes" not in c.environments:
        return []
    if image is None:
        return [f"the tool versions inside {c.pod.image} are not known yet (no pod run recorded them); "
                f"if they differ from the hosts', the report flags those cells CONFOUNDED"]
    out = []
    nodes = c.nodes if isinstance(c.nodes, list) else sorted(known)
    tools = {templates.get(t.test).tool for t in c.tests}
    for node in nodes:
        host_versions = known.get(node, {}).get("tool_versions", {})
        for tool in sorted(tools):
            h, p = host_versions.get(tool), image.get("tool_versions", {}).get(tool)
            if h and p and version_number(h) != version_number(p):
                out.append(f"{node}: host has {h!r} but {c.pod.image} has {p!r}: host and pod results of "
                           f"{tool} will not be comparable (CONFOUNDED)")
    return out


def version_number(line: str) -> str:
    """`stress-ng, version 0.15.06 (gcc 12.2.0, x86_64 Linux 6.1)` -> `0.15.06` (the kernel differs per host)."""
    m = re.search(r"\d+(?:\.\d+)+", line)
    return m.group(0) if m else line


def _plan_problems(c: campaign_file.Campaign) -> list[str]:
    """What the runner would refuse that needs no NATS: the plan's size on the listed nodes."""
    if isinstance(c.nodes, list) and (why := campaign_file.refusal(c, len(c.nodes))):
        return [why]
    return []


def plan_size(c: campaign_file.Campaign) -> str:
    """The plan a dry run names: '24 runs on 1 node' ('up to' when cells may be extended to their maximum)."""
    upto = "up to " if c.repetitions.target_ci_width is not None else ""
    if not isinstance(c.nodes, list):  # a label selector: the nodes are the runner's to find
        return f"{upto}{campaign_file.planned_runs(c, 1):,} run(s) on each node its selector matches"
    return f"{upto}{campaign_file.planned_runs(c, len(c.nodes)):,} run(s) on {len(c.nodes)} node(s)"


def _not_submitted(problems: list[str]) -> int:
    refused(problems, "nothing was submitted", len(problems))
    return 2


def _offline_dry_run(c: campaign_file.Campaign, unreachable: BusError) -> int:
    """--dry-run without NATS: the spec (already loaded) and the plan's size are checked, the nodes cannot be."""
    if problems := _plan_problems(c):
        return _not_submitted(problems)
    warn(f"the nodes were not checked against the registered nodes: {unreachable}")
    console.print(f"campaign {c.name} is valid, its nodes unchecked: {plan_size(c)} (dry run: nothing submitted)",
                  highlight=False)
    return 0


async def _submit(c: campaign_file.Campaign, dry_run: bool, skip_check: bool = False) -> int:
    start = asyncio.get_running_loop().time()
    try:
        bus = await cli_deadline.connect()
    except BusError as exc:
        if dry_run:
            return _offline_dry_run(c, exc)
        raise fail(str(exc)) from None
    try:
        await bus.ensure_streams()
        known = await _known_nodes(bus)
        if problems := check_nodes(c, known) + _plan_problems(c) + _pod_network_problems(c):
            return _not_submitted(problems)
        if await _kv_get(bus, f"campaign.{c.name}"):
            raise fail(f"campaign {c.name!r} already exists; pick another name", 2)
        why, last = await unplanned(bus, c.name)
        if why:  # published before, not planned yet: this one would be ignored
            raise fail(why, 2)
        left = cli_deadline.seconds() - (asyncio.get_running_loop().time() - start)
        # a NATS reset frees the name in the runner, not the analyzer
        await check_analyzer(c.name, left, skip_check, dry_run)
        for w in build_warnings(c, known, await _kv_get(bus, f"image.{subjects.kv_token(c.pod.image)}")):
            warn(w)
        if dry_run:
            console.print(f"campaign {c.name} is valid: {plan_size(c)} (dry run: nothing submitted)", highlight=False)
            return 0
        submitted = events.CampaignSubmitted(campaign=c.name, spec=c.model_dump(mode="json"))
        telemetry.setup_tracing("cli", os.environ.get("PODTAX_OTEL_EXPORTER", "none"))
        with telemetry.tracer("podtax.cli").start_as_current_span(f"campaign submit {c.name}",
                                                                  attributes={"podtax.campaign": c.name}):
            # one message id per submission (was campaign.<name>: JetStream's de-duplication of one id, 120 s, dropped
            # a name submitted again within that time after the runner refused it, and it still said 'submitted');
            # publish_once refuses a second submission at once
            event = events.campaign_submitted(submitted)
            at = events.utc(event.time).strftime("%Y%m%dT%H%M%S%f")
            await publish_once(bus, event.model_copy(update={"id": f"campaign.{c.name}.{at}"}), last)
        telemetry.flush()
        console.print(f"submitted campaign [bold]{c.name}[/bold]; follow it with `podtax campaign status "
                      f"{c.name} --follow`", highlight=False)
        return 0
    finally:
        await bus.close()


DRY_RUN_HELP = ("Validate only; publish nothing (so not with --follow). Without NATS, the nodes and the analyzer "
                "(an earlier campaign of the name) are not checked (it says so for the nodes); the rest is.")
SKIP_CHECK_HELP = ("Submit even if the analyzer (PODTAX_API_URL, or podtax up's) cannot be asked whether it holds "
                   "an earlier campaign of the name (refused otherwise, exit 1): if it does, their runs mix in "
                   "its cells.")


@campaign_app.command()
def submit(
    file: Annotated[Path, typer.Argument(help="Campaign YAML file.", parser=a_path)],
    follow: Annotated[bool, typer.Option(help=SUBMIT_FOLLOW_HELP)] = False,
    dry_run: Annotated[bool, typer.Option(help=DRY_RUN_HELP)] = False,
    skip_analyzer_check: Annotated[bool, typer.Option(help=SKIP_CHECK_HELP)] = False,
) -> int:
    """Validate a campaign file and publish it to the runner."""
    if dry_run and follow:
        raise fail("--dry-run publishes nothing, so there is nothing to --follow: drop one of them", 2)
    try:
        c = campaign_file.load(file)
    except (campaign_file.CampaignError, ValueError) as exc:
        return _not_submitted([str(exc)])
    for w in campaign_file.warnings(c):
        warn(w)
    code = cli_deadline.run(_submit(c, dry_run, skip_analyzer_check), f"submitting campaign {c.name}")
    if code == 0 and follow:  # --dry-run --follow is refused above
        return status(c.name, follow=True)
    return code


async def _status_once(name: str, look: bool = True) -> dict[str, Any] | None:
    try:
        bus = await cli_deadline.connect()
    except BusError as exc:
        raise fail(str(exc)) from None
    try:  # a running campaign's state may not say why it stalls: NATS without room refuses it too (cli.room)
        state = await _kv_get(bus, f"campaign.{name}")
        return await room_said(bus, state) if look else state
    finally:
        await bus.close()


@campaign_app.command()
def status(
    name: Annotated[str, typer.Argument(help="Campaign name.", callback=campaign_name)],
    follow: Annotated[bool, typer.Option(help=FOLLOW_HELP)] = False,
    timeout: Annotated[float | None, typer.Option(help="With --follow: give up after this many seconds "
                                                  "(default 86400).", callback=_seconds)] = None,
) -> int:
    """Runs done, failed, cancelled and remaining per node, with a progress bar and an ETA."""
    if timeout is not None and not follow:
        raise fail("--timeout bounds --follow: add --follow (or drop --timeout)", 2)
    timeout = FOLLOW_S if timeout is None else timeout
    state = cli_deadline.run(_status_once(name), f"reading the state of campaign {name}")
    wait_until = time.monotonic() + (min(30, timeout) if follow else 0)  # --timeout bounds this wait too
    while state is None and time.monotonic() < wait_until:  # just submitted: the runner is planning it
        time.sleep(0.5)
        state = cli_deadline.run(_status_once(name), f"reading the state of campaign {name}")
    if state is None:
        refused = cli_deadline.run(_refused(name), f"reading why campaign {name} was refused")
        if refused:
            raise fail(f"the runner refused campaign {name!r}: {refused}")
        raise fail(f"no campaign named {name!r} (submitted campaigns appear once the runner has planned them; "
                   f"is the runner running?)")
    progress = Progress(TextColumn("{task.description:<24}"), BarColumn(), TextColumn("{task.fields[info]}"),
                        console=console, transient=False, auto_refresh=False)
    tasks: dict[str, Any] = {}
    held_said: set[tuple[str, str]] = set()
    deadline, still = time.monotonic() + timeout, 1  # polls without change (cli.room: when NATS's room is looked at)
    try:
        with progress:
            while True:
                for node, row in sorted(progress_rows(state).items()):
                    finished, info = progress_info(row)
                    if node not in tasks:
                        tasks[node] = progress.add_task(node, total=row["total"], info=info)
                    progress.update(tasks[node], completed=finished, total=row["total"], info=info)
                progress.refresh()
                _say_held(state, held_said)
                if not follow or state.get("finished_at") or time.monotonic() > deadline:
                    break
                time.sleep(1)
                before, state = state, cli_deadline.run(_status_once(name, look_due(still)),
                                                        f"reading the state of campaign {name}") or state
                still = polls_still(before, state, still)
    except KeyboardInterrupt:  # Ctrl-C stops the following, not the campaign: the runner says so
        interrupted.note(f"stopped following campaign {name}; the campaign goes on: `podtax campaign status {name} "
                         f"--follow` follows it again, `podtax campaign cancel {name}` stops it")
        raise
    for warning in state.get("warnings", []):  # cells that became one once `all` was resolved (planned once)
        err.print(f"[yellow]warning:[/yellow] {escape(warning)}", highlight=False)
    done = bool(state.get("finished_at"))
    cancelled = " (cancelled)" if state.get("cancelled_at") else ""
    console.print(f"campaign {name}: " + ("finished" if done else "running") + cancelled)
    if follow and not done:  # an exit status 1 with nothing said before (audit)
        err.print(f"gave up following after {timeout:g} s (--timeout); the campaign goes on", highlight=False)
        return 1
    failed = sum(int(row["failed"]) for row in progress_rows(state).values())
    if follow and failed:
        why = "; ".join(why_failed(name))  # what the analyzer stored: each reason and the fix it names
        say(f"campaign {name} finished with {failed} failed run(s) (exit status {RUNS_FAILED})"
            + (f": {why}" if why else ""))
        return RUNS_FAILED
    return 0


def _say_held(state: dict[str, Any], said: set[tuple[str, str]]) -> None:
    """Say (once each) why the runner holds a run's report, or cannot send its own events: NATS refusing them (the
    stream full) holds the run, and so the campaign, until NATS takes them; the reason names the limit to raise."""
    if (stalled := state.get("stalled")) and ("", stalled) not in said:
        said.add(("", stalled))
        err.print(f"[yellow]stalled:[/yellow] {escape(stalled)}", highlight=False)
    for run_id, why in state.get("held", {}).items():
        if (run_id, why) not in said:
            said.add((run_id, why))
            err.print(f"[yellow]held:[/yellow] run {escape(run_id)}: {escape(why)}", highlight=False)


async def _refused(name: str) -> str | None:
    """Why the runner refused the last submission of `name` NATS holds (a refusal of an earlier one is not its)."""
    bus = await cli_deadline.connect()
    try:
        doc = await _kv_get(bus, f"refused.{name}")
        held = await last_submission(bus, name) if doc else None
        return doc.get("reason") if doc and (held is None or refusal_of(doc, held)) else None
    finally:
        await bus.close()


async def _cancel(name: str, reason: str, wait_s: float) -> int:
    try:
        bus = await cli_deadline.connect()
    except BusError as exc:
        raise fail(str(exc)) from None
    try:
        state = await _kv_get(bus, f"campaign.{name}")
        if state is None:
            raise fail(f"no campaign named {name!r}; `podtax campaign status NAME` shows planned campaigns")
        if state.get("finished_at"):
            console.print(f"campaign {name} already finished; nothing to cancel")
            return 0
        event = events.campaign_cancelled(events.CampaignCancelled(campaign=name, reason=reason))
        await bus.publish(event.model_copy(update={"id": f"campaign.{name}.cancel"}))
        deadline = time.monotonic() + wait_s
        while not state.get("cancelled_at") and time.monotonic() < deadline:
            await asyncio.sleep(0.3)
            state = await _kv_get(bus, f"campaign.{name}") or state
        if not state.get("cancelled_at"):
            console.print(f"cancellation of {name} sent; the runner has not acknowledged it yet (is it running?)")
            return 0
        p = state.get("progress", {}).values()
        cancelled, in_flight = sum(n.get("cancelled", 0) for n in p), sum(n.get("dispatched", 0) for n in p)
        console.print(f"campaign {name} cancelled: {cancelled} run(s) recorded as cancelled; {in_flight} still in "
                      f"flight: a control-plane run (volume-churn, pod-startup) stops before its next object, deletes "
                      f"what it created and is recorded as cancelled; a pod run's Job is deleted and it is recorded "
                      f"as cancelled; a host run's processes are killed by its host agent and it is recorded as "
                      f"cancelled; a run that ends before it is stopped (a pod run's Job is looked at every 5 s) keeps "
                      f"its result", highlight=False)
        return 0
    finally:
        await bus.close()


@campaign_app.command()
def cancel(
    name: Annotated[str, typer.Argument(help="Campaign name.", callback=campaign_name)],
    reason: Annotated[str, typer.Option(help="Why (recorded with the cancellation).")] = "cancelled by the operator",
    wait: Annotated[float, typer.Option(help="Seconds to wait for the runner to confirm.", callback=_seconds)] = 10,
) -> int:
    """Cancel a campaign: pending runs are recorded as cancelled; a control-plane run in flight stops before its next
    object, deletes what it created and is recorded as cancelled; a pod run in flight has its Job deleted and is
    recorded as cancelled; a host run in flight is stopped by its host agent and recorded as cancelled. A run that
    ends before it is stopped (a pod run's Job is looked at every 5 s) keeps its result."""
    return cli_deadline.run(_cancel(name, reason, wait), f"cancelling campaign {name}", extra_s=wait)


def register(app: typer.Typer) -> None:
    app.add_typer(campaign_app, name="campaign")
