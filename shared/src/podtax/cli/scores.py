"""`podtax scores`: what the benchmark-aware scheduler sees (node scores) and what it decided (placements).

Per benchmark group (test, metric it ranks by, parameters), one row per node with its runs, median (the mean under a
profile ranking by the mean) and the median's 95% interval (titled so under such a profile), when its newest run ended,
and whether the scheduler uses it: results older than the score TTL (PODTAX_SCHEDULER_SCORE_TTL_S) and results the
analyzer flagged (the profile's ignore_flags: CONFOUNDED, BIMODAL, OVERLAP, THROTTLED, EMULATED by default; EMULATED: a
run's tool executable, built for another architecture, ran through qemu-user on the node) are ignored by the scheduler,
and the table says so (not for a score the scheduler takes as EMULATED from its node's kubernetes.io/arch label alone,
an amd64 image's x86_64 tool on an arm64 node whose runs could not tell: the table cannot read labels and says "used";
the scheduler's Event names it), as it says how a score without interval counts and that one whose interval reaches 0
sets no reference (every score is ignored when the profile's BenchmarkScore weight is 0; a profile ranking by the mean
is named). Scores of one group that would be used but come from tool executables built for different architectures of
one kind of machine (tool_archs: a 32-bit armhf sysbench on some nodes, arm64 on others; i386 beside x86_64) are used
unless the scheduler ranks those nodes together on nodes of one kubernetes.io/arch label (it then places the pod by
resources alone, BenchmarkMixedArch): each says which nodes' architecture differs (mixed_archs; the table cannot tell
the nodes' labels, the scheduler reads them). An x86 server and a Pi, each scored by its native build (x86_64, aarch64),
never share a label: they are ranked, and their rows say "used" (podtax.archfamily: the scheduler mixes only builds of
one family, a node's label or not).
A node that switched tool builds cleanly (every run of the older builds before the first of the newest) is scored by
the newest build's runs alone: its row says since when and which runs were left out (left_out_said); builds whose runs
interleave stay CONFOUNDED. A node whose older runs the user retired (`podtax retire NODE --before DATE`) is scored
by its runs since then: its row says how many of this score's runs before it were retired (and the node's, every
test), and when; an analyzer older than per-score counts gives the node's alone (said once).
The BenchmarkScore settings are those of the scheduler's profile (--profile,
else PODTAX_SCHEDULER_PROFILE, else the defaults: podtax.scheduler_profile, the file the scheduler reads). Below,
the newest placements (GET /api/placements) with the scheduler's own explanation.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from podtax import templates
from podtax.archfamily import family as _family
from podtax.cli import cards
from podtax.cli.common import check_settings, cluster_name, console, fail, node_name, test_name, wide_console
from podtax.cli.report_render import _value as report_value
from podtax.cli.results import _get as api_get
from podtax.cli.retire import retired_rows, retired_said
from podtax.config import ConfigError, SchedulerSettings
from podtax.event_payloads import printable_tree
from podtax.param_labels import label, params_labels
from podtax.scheduler_profile import BenchmarkArgs, load_profile

DEFAULTS = BenchmarkArgs()


def _age(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def _noise_said(noise: float) -> str:
    said = f"{noise * 100:g}%"
    return f"{said}/sqrt(n) by default" if noise == DEFAULTS.no_interval_noise else \
        f"{said}/sqrt(n), the profile's no_interval_noise"


def status(score: dict[str, Any], now: datetime, ttl_s: float, args: BenchmarkArgs = DEFAULTS) -> str:
    """How the scheduler treats one node score (podtax_scheduler.scoring.BenchmarkScore with the profile's
    BenchmarkScore `args`): "ignored: <why>" when stale, flagged with one of ignore_flags (both said for a stale
    flagged score) or not positive; else "used". It needs no minimum run count: any run counts, each node's median
    pulled toward the group's by weight n/(n+k) (k: shrink_runs), and a node with no interval (under 6 runs) is taken
    as its speed less a noise band of no_interval_noise / sqrt(n), so smaller differences do not decide; the status
    says so for those. An interval reaching 0 (a lower end missing or not above 0; for a duration, an upper end)
    bounds the speed by 0: the score is used for its speed but sets no reference, and the status says that.
    The node's value is the profile's statistic (median, or mean: named in the status), as the scheduler's
    BenchmarkScore._columns takes it. A profile whose BenchmarkScore weight is 0 uses no score (algorithm.decide
    skips a plugin of weight 0): every score is "ignored" and says so."""
    if args.weight <= 0:
        return ("ignored: the profile's BenchmarkScore weight is 0, so the scheduler ranks by no benchmark score "
                "(the other score plugins, such as LeastAllocated, decide)")
    age = (now - datetime.fromisoformat(score["updated_at"])).total_seconds()
    flagged = [f for f in score.get("flags") or [] if f in args.ignore_flags]
    why = []
    if age > ttl_s:
        why.append(f"older than the {ttl_s / 3600:g} h TTL ({_age(age)})")
    if flagged:
        archs = score.get("tool_archs") or []
        mixed = f" (its runs' tool executables were built for {' + '.join(archs)}" if len(archs) > 1 else ""
        if "EMULATED" in flagged:  # a score of several builds: only those the kernel cannot run were emulated
            said = (f"{mixed}: those of an architecture this node's kernel runs only through an emulator, qemu-user, "
                    f"measured the emulator; install its native build)") if mixed else (
                f" (tool executables built for {archs[0] if archs else 'another architecture'} ran through an "
                "emulator, qemu-user, on this node: install its native build)")
        else:
            said = f"{mixed})" if mixed and "CONFOUNDED" in flagged else ""
        why.append(f"flagged {'/'.join(flagged)}{said}")
    if why:
        return "ignored: " + "; ".join(why)
    stat = args.statistic  # "median" or "mean", the scheduler's statistic
    its = "its median" if stat == "median" else f"its {stat} (the profile's statistic)"
    value = score.get(stat)
    if value is None or not value > 0:
        return f"ignored: {its} is not a positive number"
    low, high = score.get("ci_low"), score.get("ci_high")
    if low is None and high is None:
        n = score.get("n", 0)
        band = args.no_interval_noise / max(n, 1) ** 0.5
        return (f"used, with no interval ({n} {'run' if n == 1 else 'runs'}): {its} counts "
                f"{n}/({n}+{args.shrink_runs:g}), the rest is the group's median; {band:.1%} below it is "
                f"within noise ({_noise_said(args.no_interval_noise).replace('(n)', f'({n})')})")
    end = low if score.get("higher_is_better", True) else high
    if end is None or not end > 0:
        which = "lower" if score.get("higher_is_better", True) else "upper"
        said = f"no {which} end" if end is None else f"{which} end {_fmt(end)}"
        return (f"used, sets no reference: its 95% interval reaches 0 ({said}), so the scheduler bounds its speed "
                f"by 0; {its} is scored against the other nodes' bounds")
    return "used" if stat == "median" else f"used: {its}"


MIXED = "used unless ranked with nodes"  # a status the scheduler ignores only for some pods (mixed_archs)


def mixed_archs(group: list[dict[str, Any]]) -> None:
    """Of one group's rows (each with its status), the used ones whose scores name a tool architecture, when another
    used row names another architecture that runs on the same kind of machine (podtax.archfamily: arm beside
    aarch64, i386 beside x86_64): each becomes "used unless ranked with ...", naming those nodes (the scheduler
    places a pod by resources alone when its candidates' scores mix architectures on nodes of one kubernetes.io/arch
    label: podtax_scheduler.mixed_arch; the rows do not carry the nodes' labels, so builds of two families, which
    never share a label, are not marked)."""
    used = {r["node"]: "+".join(r.get("tool_archs") or []) for r in group if r["status"].startswith("used")}
    by_arch: dict[str, list[str]] = {}
    for node, arch in used.items():
        if arch:
            by_arch.setdefault(arch, []).append(node)
    for r in group:
        mine = used.get(r["node"])
        if not mine:
            continue
        others = "; ".join(f"{arch} on {', '.join(sorted(nodes))}" for arch, nodes in sorted(by_arch.items())
                           if arch != mine and _family(arch) == _family(mine))
        if not others:
            continue
        r["status"] = (f"{MIXED} of its kubernetes.io/arch whose scores come from tool executables built for another "
                       f"architecture (this node's: {mine}; {others}): the scheduler then places by resources alone")


def left_out_said(score: dict[str, Any]) -> str:
    """What a score left out after a clean switch of tool build (NodeScore.left_out; the analyzer's
    build_switch.py), said after its status; "" when it counts every run."""
    left = score.get("left_out")
    if not left:
        return ""
    runs = left["runs"]
    return (f"; counts only its runs since {left['since'][:19].replace('T', ' ')} (a clean switch of tool build): "
            f"{runs} older {'run' if runs == 1 else 'runs'} of {', '.join(left['builds'])} left out (still stored)")


def _for_option(line: str) -> str:
    """load_profile's message about PODTAX_SCHEDULER_PROFILE, said of --profile ('unset it': leave out the option)."""
    return line.replace("PODTAX_SCHEDULER_PROFILE=", "--profile ").replace("or unset it ", "or leave out --profile ")


def _fmt(v: float | None) -> str:
    """As the report writes a figure (report_render._value: 4 significant digits below 1,000, else in full)."""
    return "-" if v is None else report_value(v)


def _value(score: dict[str, Any], stat: str) -> str:
    """A score's value by the profile's statistic (median or mean: the one the scheduler scores), marked when its
    runs are BIMODAL: one figure of runs in two modes (a median lies between them with as many runs in each, else
    inside the larger one; a mean between them; a score does not say which)."""
    shown = _fmt(score.get(stat))
    return f"{shown} (runs in 2 modes)" if "BIMODAL" in (score.get("flags") or []) else shown


def scores(
    test: Annotated[str | None, typer.Option(help="Only this benchmark (template name).", callback=test_name)]
    = None,
    node: Annotated[str | None, typer.Option(help="Only this node.", callback=node_name)] = None,
    cluster: Annotated[str | None, typer.Option(help="Only this cluster's scores (a placement records no "
                                                "cluster: the placements of every cluster are shown).",
                                                callback=cluster_name)] = None,
    env: Annotated[str, typer.Option(help="Side whose results rank nodes (the scheduler's score env).")]
    = "kubernetes",
    all_metrics: Annotated[bool, typer.Option("--all-metrics", help="Every metric, not only the ranked one.")]
    = False,
    placements: Annotated[int, typer.Option(min=0, max=10_000, help="Show this many newest placements (0: none; the "
                                                                   "analyzer's API serves up to 10000).")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Print scores (with status) and placements as JSON.")]
    = False,
    profile: Annotated[Path | None, typer.Option(help="The scheduler's profile YAML, as its --profile (default: "
                                                      "PODTAX_SCHEDULER_PROFILE, else the default profile).")]
    = None,
) -> int:
    """Show what the scheduler sees (node scores, and which it ignores) and what it decided."""
    if env not in ("host", "kubernetes"):
        raise typer.BadParameter("must be host or kubernetes", param_hint="--env")
    settings = check_settings(SchedulerSettings)
    try:  # the BenchmarkScore settings the scheduler scores with
        args = load_profile(profile or settings.scheduler_profile).score.BenchmarkScore
    except ConfigError as exc:
        raise fail(exc.line if profile is None else _for_option(exc.line), 2) from None
    ttl_s = settings.scheduler_score_ttl_s
    rows = api_get("/api/scores", {"test": test, "node": node, "cluster": cluster, "env": env})
    assert isinstance(rows, list)
    if not all_metrics:
        rows = [r for r in rows if templates.is_primary_metric(r["test"], r["params_key"], r["metric"])]
    now = datetime.now(UTC)
    for r in rows:
        r["status"] = status(r, now, ttl_s, args)
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["cluster"], r["test"], r["metric"], r["params_key"]), []).append(r)
    for group in groups.values():  # the scheduler compares nodes only inside a group
        mixed_archs(group)
    retired = {(r["cluster"], r["node"]): r for r in retired_rows()} if rows else {}
    for r in rows:
        r["status"] += left_out_said(r) + retired_said(r, retired)
        if (r["cluster"], r["node"]) in retired:
            r["retired"] = retired[r["cluster"], r["node"]]
    placed = api_get("/api/placements", {"test": test, "node": node, "limit": placements}) if placements else []
    assert isinstance(placed, list)
    if as_json:
        print(json.dumps({"scores": rows, "placements": placed}, indent=1))
        return 0
    # names and words from the bus: never a terminal's control sequence, nor rich markup
    rows, placed = printable_tree(rows), printable_tree(placed)
    out = wide_console()
    if not rows:
        console.print("no node scores yet" + (f" for {test}" if test else ""))
    groups = {}
    for r in rows:
        groups.setdefault((r["cluster"], r["test"], r["metric"], r["params_key"]), []).append(r)
    labels = params_labels((r["test"], r["params_key"]) for r in rows)  # as every label (podtax.param_labels)
    for (cl, ts, metric, params), group in sorted(groups.items()):
        unit = group[0]["unit"]
        better = "higher" if group[0]["higher_is_better"] else "lower"
        # Text, never markup: rich read "[threads=1]" as markup and dropped it, so groups shared a title
        shown = label(labels, ts, params)  # '' when every param is left out: then no brackets at all
        what = f"[{shown}]" if shown else "" if params else "[no params]"
        title = f"{' '.join(filter(None, (ts, what, metric)))} ({unit}, {better} is better) — cluster {cl}"
        ci = "95% CI" if args.statistic == "median" else "median's 95% CI"  # the interval is the median's
        columns = [("node", "left"), ("runs", "right"), (args.statistic, "right"), (ci, "left"),
                   ("newest run", "left"), ("scheduler", "left")]
        cells = [[r["node"], str(r["n"]), _value(r, args.statistic),
                  f"{_fmt(r['ci_low'])} – {_fmt(r['ci_high'])}" if r["ci_low"] is not None else "- (under 6 runs)",
                  r["updated_at"][:19].replace("T", " "), r["status"]] for r in sorted(group, key=lambda r: r["node"])]
        out.print(cards.fitted(out, title, columns, cells, figures=(2, 3)))
    ignored = sum(r["status"].startswith("ignored") for r in rows)
    if ignored:
        out.print(f"{ignored} of {len(rows)} node scores are ignored by the scheduler (see the last column).")
    sometimes = sum(r["status"].startswith(MIXED) for r in rows)
    if sometimes:
        out.print(f"{sometimes} of {len(rows)} node scores are ignored for a pod whose candidates of one "
                  f"kubernetes.io/arch were scored by tool executables built for different architectures (see the "
                  f"last column).")
    if placements:
        columns = [("placed at", "left"), ("pod", "left"), ("node", "left"), ("test", "left"), ("explanation", "left")]
        cells = [[p["placed_at"][:19].replace("T", " "), f"{p['namespace']}/{p['pod']}", p["node"] or "-",
                  p["test"] or "-", p["message"] or ""] for p in placed]
        out.print(cards.fitted(out, f"newest {len(placed)} placements", columns, cells, named_by=2) if placed
                  else "no placements stored yet")
    return 0


def register(app: typer.Typer) -> None:
    app.command()(scores)
