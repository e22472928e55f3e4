"""Planted pod-tax campaigns through compare_campaign (a real DuckDB file, tests/analysis/analysis_synth.py): per
scenario, one campaign per seed, how often the verdict is right, in the wrong direction, a false claim (a difference
where none was planted, or "no detectable difference" where one was), withheld, and how often the shown 95% interval
covers the planted ratio. "choose" seeds (1-30) are the ones rules may be looked at on; "check" seeds (1001-1030)
are for checking them.

The anchor, measured on the same cells in the same run: a plain rank test (Mann-Whitney two-sided, p < 0.05, the
direction from the sides' medians; otherwise withheld: a rank test cannot claim "no detectable difference"),
scored alike. Each row prints podtax's and the anchor's right verdicts and false claims; the last lines the totals,
the ratio (podtax right / anchor right) and the load average. The counts are fixed by the seeds (the same every
run); no assertions.

    .venv/bin/python bench/bench_planted_verdicts.py [choose|check] [scenario ...] [--quick]

With no arguments, every scenario on the "check" seeds (about 1 minute on 2 cores); --quick: the first 10 seeds of
the set (`make bench`, about 20 s); --list names the scenarios.
"""
from __future__ import annotations

import sys
import tempfile
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from anchor import line, loadavg
from scipy.stats import mannwhitneyu

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "analysis"))
from analysis_synth import CellSpec, SideSpec, insert_cells, open_db  # noqa: E402
from podtax.oneline_args import OneLineParser
from podtax_analyzer.comparisons import compare_campaign  # noqa: E402

T = 0.01


def noise(rng, scale, n, cv=0.02):
    return scale * np.exp(rng.normal(0, cv, n)) * (1.0 - rng.gamma(2.0, 0.004, n))


def cell(node, h, p, hib=True, order=None, **kw):
    kw.setdefault("metric", "events_per_second" if hib else "latency_avg")
    kw.setdefault("unit", "events/s" if hib else "ms")
    return CellSpec(node, SideSpec(np.asarray(h, float)), SideSpec(np.asarray(p, float)), higher_is_better=hib,
                    order=order, **kw)


def simple(r, n=10, hib=True, cv=0.02):
    def f(rng):
        return [(cell("node-a", noise(rng, 1000, n, cv), noise(rng, 1000 * r, n, cv), hib), r)]
    return f


def noisy_node(rng):
    return [(cell("node-a", noise(rng, 1000, 10, 0.08), noise(rng, 1000, 10, 0.08)), 1.0),
            (cell("node-b", noise(rng, 1000, 10), noise(rng, 900, 10)), 0.9),
            (cell("node-c", noise(rng, 1000, 10), noise(rng, 900, 10)), 0.9)]


def drift(order_kind, fall=0.10, r=1.0, n=10):
    def f(rng):
        order = [0] * n + [1] * n if order_kind == "host-first" else [i % 2 for i in range(2 * n)]
        order = np.asarray(order)
        trend = 1 - fall * np.arange(2 * n) / (2 * n - 1)
        h = noise(rng, 1000, n) * trend[order == 0]
        p = noise(rng, 1000 * r, n) * trend[order == 1]
        return [(cell("node-a", h, p, order=list(order)), r)]
    return f


def bimodal(n, r=1.0, jump=1.25, share=0.5):
    def f(rng):
        def side(scale):
            x = noise(rng, scale, n, 0.01)
            return np.where(rng.random(n) < share, x * jump, x)
        return [(cell("node-a", side(1000), side(1000 * r)), r)]
    return f


def heavy(r=1.0, n=10, kind="t2"):
    def f(rng):
        def side(scale):
            if kind == "t2":
                return scale * np.exp(0.02 * rng.standard_t(2, n))
            x = noise(rng, scale, n)
            k = rng.random(n) < 0.1  # interference: 10% of runs at half speed
            return np.where(k, x * 0.5, x)
        return [(cell("node-a", side(1000), side(1000 * r)), r)]
    return f


def quantized(r=1.0, n=10, kind="sockperf"):
    def f(rng):
        if kind == "sockperf":  # usec latency ~30, printed to whole usec in this model
            h, p = np.round(noise(rng, 30, n)), np.round(noise(rng, 30 * r, n))
            return [(cell("node-a", h, p, hib=False, metric="avg_us", unit="µs", test="sockperf", tool="sockperf",
                          params={"mode": "ping-pong"}), r)]
        h, p = np.round(noise(rng, 150, n, 0.01)), np.round(noise(rng, 150 * r, n, 0.01))
        return [(cell("node-a", h, p, metric="read_mb_per_second", unit="MB/s", test="hdparm", tool="hdparm",
                      params={"mode": "disk", "device": "/dev/sda"}), r)]
    return f


SCENARIOS = {
    "null n10": simple(1.0), "5% slow n10": simple(0.95), "10% slow n10": simple(0.90), "20% slow n10": simple(0.80),
    "null n20": simple(1.0, 20), "5% slow n20": simple(0.95, 20),
    "latency 10% slow": simple(1.10, hib=False), "latency null": simple(1.0, hib=False),
    "noisy node (a null cv8%, b,c 10%)": noisy_node,
    "drift 10% host-first, null": drift("host-first"), "drift 10% interleaved, null": drift("alternate"),
    "drift 10% host-first, 10% slow": drift("host-first", r=0.9),
    "blocked no drift, null": drift("host-first", 0.0), "blocked no drift, 5% slow": drift("host-first", 0.0, 0.95),
    "blocked no drift, 10% slow": drift("host-first", 0.0, 0.90),
    "blocked no drift n20 5%": drift("host-first", 0.0, 0.95, 20),
    "drift 5% host-first, null": drift("host-first", 0.05), "drift 10% host-first n20, null": drift("host-first", n=20),
    "bimodal n6 null": bimodal(6), "bimodal n10 null": bimodal(10), "bimodal n20 null": bimodal(20),
    "bimodal n6 10% slow": bimodal(6, 0.9), "bimodal n10 10% slow": bimodal(10, 0.9),
    "bimodal n6 20%-share": bimodal(6, share=0.2), "bimodal n10 20%-share": bimodal(10, share=0.2),
    "heavy t2 null": heavy(), "heavy t2 10% slow": heavy(0.9),
    "interference 10% null": heavy(kind="int"), "interference 10% slow": heavy(0.9, kind="int"),
    "n3 null": simple(1.0, 3), "n3 10% slow": simple(0.9, 3), "n5 null": simple(1.0, 5), "n5 10% slow": simple(0.9, 5),
    "sockperf int us null": quantized(), "sockperf int us 5% slow": quantized(1.05),
    "hdparm int MB/s null": quantized(kind="hdparm"), "hdparm int MB/s 5% slow": quantized(0.95, kind="hdparm"),
}


def score(verdict, higher_is_better, r):
    if verdict in ("faster", "slower"):
        if abs(r - 1) <= T:
            return "false"
        want = "faster" if (r > 1) == higher_is_better else "slower"
        return "right" if verdict == want else "wrongdir"
    if verdict == "no detectable difference":
        return "right" if abs(r - 1) <= T else "false"
    return "withheld"


def rank_test_verdict(spec: CellSpec) -> str:
    """The anchor: a plain two-sided Mann-Whitney test at 5%, the direction from the medians; withheld when not
    significant (no equivalence claim)."""
    host, pod = spec.host.values, spec.pod.values
    if mannwhitneyu(pod, host, alternative="two-sided").pvalue >= 0.05:
        return "inconclusive"
    return "faster" if (np.median(pod) > np.median(host)) == spec.higher_is_better else "slower"


def planted(make, name: str, seeds) -> Iterator[tuple[Any, float, CellSpec]]:
    """Each compared cell of one campaign per seed (``make(rng)``: the campaign's (CellSpec, planted ratio) pairs,
    the rng seeded by the seed and ``name``), in a temporary DuckDB file: (the cell, its planted ratio, its spec)."""
    with tempfile.TemporaryDirectory() as tmp:
        con = open_db(Path(tmp) / "p.duckdb")
        try:
            truths, specs = {}, {}
            for s in seeds:
                cells = make(np.random.default_rng([s, zlib.crc32(name.encode())]))
                for c, r in cells:
                    c.campaign = f"c{s}"
                    truths[(c.campaign, c.node)], specs[(c.campaign, c.node)] = r, c
                insert_cells(con, [c for c, _ in cells], seed=s)
            for s in seeds:
                for c in compare_campaign(con, f"c{s}").cells:
                    yield c, truths[(f"c{s}", c.node)], specs[(f"c{s}", c.node)]
        finally:
            con.close()


def run(names, seeds) -> Counter:
    print(f"{'scenario':38s} cells right wrongdir false withheld  ratio-shown  covered/ci  anchor:right false  flags")
    totals: Counter = Counter()
    for name in names:
        tally, flags = Counter(), Counter()
        for c, r, spec in planted(SCENARIOS[name], name, seeds):
            tally[score(c.verdict, c.higher_is_better, r)] += 1
            tally["anchor " + score(rank_test_verdict(spec), spec.higher_is_better, r)] += 1
            tally["cells"] += 1
            tally["ratio"] += c.ratio is not None
            if c.ci_low is not None:
                tally["ci"] += 1
                tally["cov"] += c.ci_low <= r <= c.ci_high
            for fl in c.flags:
                flags[fl] += 1
        t = tally
        totals.update(t)
        print(f"{name:38s} {t['cells']:5d} {t['right']:5d} {t['wrongdir']:8d} {t['false']:5d} {t['withheld']:8d}"
              f"  {t['ratio']:11d}  {t['cov']:3d}/{t['ci']:<3d}     {t['anchor right']:12d} {t['anchor false']:5d}  "
              + " ".join(f"{k}:{v}" for k, v in flags.most_common(4)))
    return totals


def summary(t: Counter, seeds: range) -> str:
    """The totals beside the anchor's on the same cells, with the ratio and the load average."""
    return (line(f"right verdicts, {len(seeds)} seeds ({seeds.start}-{seeds.stop - 1}), {t['cells']} cells",
                 t["right"], "cells", "plain rank test p<0.05, same cells", t["anchor right"], loadavg())
            + f"\nfalse claims: podtax {t['false']}, anchor {t['anchor false']}; wrong direction: podtax "
              f"{t['wrongdir']}, anchor {t['anchor wrongdir']}; withheld by podtax: {t['withheld']}")


SEEDS = {"choose": range(1, 31), "check": range(1001, 1031)}


def main(argv: list[str]) -> int:
    ap = OneLineParser(prog="bench_planted_verdicts.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("words", nargs="*", metavar="[choose|check] [scenario ...]",
                    help="the seeds (choose: 1-30, check: 1001-1030; default check), then scenarios (default all)")
    ap.add_argument("--list", action="store_true", help="name the scenarios and exit")
    ap.add_argument("--quick", action="store_true", help="the first 10 seeds of the set (make bench)")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(SCENARIOS))
        return 0
    words = args.words
    which = words.pop(0) if words and words[0] in SEEDS else "check"
    if unknown := [w for w in words if w not in SCENARIOS]:
        print(f"{ap.prog}: unknown scenario {unknown[0]!r}; --list names them (quote names with spaces)",
              file=sys.stderr)
        return 2
    seeds = SEEDS[which][:10] if args.quick else SEEDS[which]
    print(summary(run(words or list(SCENARIOS), seeds), seeds))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
