"""False claims and withheld true taxes of cells whose one node name hides two machines run in other shares on the
two sides (9/1 and 1/9, 8/2 and 2/8), across how fast the slow machine is (35% to 95% of the fast one), with no pod
tax or a 10% one, through compare_campaign (a real DuckDB file, tests/analysis/analysis_synth.py); and, as a check
that a rule for them withholds no ordinary tax, cells on one machine with a 5% or 10% tax and one stray run a side.

Per case, 3 blocks of seeds (the blocks' median is printed): the share of cells with a false claim (a difference
where none was planted, or "no detectable difference" where one was) and of cells with a planted tax whose verdict
was withheld. The anchor, printed beside with the ratio (this tree / anchor; '-' where the anchor is 0): the same
cells with cell_analysis's rule for a run a side toward the other side's level switched off (TOWARD = False, this
process), or through another tree of the project (--anchor DIR: a `git archive` of the old commit, run in a child
process with its PYTHONPATH). The counts are fixed by the seeds.

    git archive <old commit> | tar -x -C DIR
    .venv/bin/python bench/bench_crossed_mixes.py [--seeds N] [--quick] [--anchor DIR] [case ...]

Default: every case, 3 blocks of 30 seeds (about 5 minutes a tree on 2 cores); --quick: 3 blocks of 5 seeds (make
bench); --list names the cases.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
from anchor import cases_refused, loadavg
from bench_crossed_spans import machines
from bench_planted_verdicts import cell, noise, planted, score
from podtax.oneline_args import OneLineParser
from podtax_analyzer import cell_analysis, cell_pool


def strays(r, lone=None):
    """One machine, the pod ``r`` times the host; one host run at ``lone`` of the host's level and one pod run at
    1 / ``lone`` of the pod's (a stray run a side, each toward the other side; None: each drawn from 60-95%)."""
    def f(rng):
        host, pod = noise(rng, 1000.0, 10), noise(rng, 1000.0 * r, 10)
        at = rng.uniform(0.6, 0.95, 2) if lone is None else (lone, lone)
        host[0], pod[0] = host[0] * at[0], pod[0] / at[1]
        return cell("node-a", host, pod), r
    return f


def heavy(r, n=20):
    """One machine, Student t noise of 3 degrees of freedom (2%) on ``n`` runs a side, the pod ``r`` times the host:
    heavy tails put a run toward the other side's level on each side now and then (the cost of _toward, below)."""
    def f(rng):
        host, pod = (1000.0 * x * np.exp(0.02 * rng.standard_t(3, n)) for x in (1.0, r))
        return cell("node-a", host, pod), r
    return f


def plain(r):
    def f(rng):
        return cell("node-a", noise(rng, 1000.0, 10), noise(rng, 1000.0 * r, 10)), r
    return f


SLOW = (0.35, 0.5, 0.65, 0.8, 0.9, 0.95)
CASES = {f"{main}/{10 - main} at {slow:.0%} {'no tax' if r == 1 else '10% slow'}": machines(r, slow=slow, main=main)
         for main in (9, 8) for slow in SLOW for r in (1.0, 0.9)}
CASES |= {"one machine 10% slow": plain(0.9), "one machine 5% slow": plain(0.95),
          "one machine t3 noise 20/20, 10% slow": heavy(0.9), "one machine t3 noise 10/10, 10% slow": heavy(0.9, 10),
          "stray run a side at 70%, 10% slow": strays(0.9, 0.7), "stray run a side at 85%, 10% slow": strays(0.9, 0.85),
          "stray run a side at 60-95%, 10% slow": strays(0.9)}


def rates(name: str, seeds: range, blocks: int) -> dict[str, list[float]]:
    """Each block's share of false claims and of withheld taxes (of the cells with a tax planted)."""
    out: dict[str, list[float]] = {"false": [], "withheld": []}
    size = len(seeds) // blocks
    for b in range(blocks):
        t: Counter = Counter()
        for c, r, _ in planted(lambda rng, case=CASES[name]: [case(rng)], name, seeds[b * size:(b + 1) * size]):
            t[score(c.verdict, c.higher_is_better, r)] += 1
            t["cells"] += 1
        out["false"].append(t["false"] / t["cells"])
        out["withheld"].append(t["withheld"] / t["cells"] if "no tax" not in name else float("nan"))
    return out


def _anchor(tree: str, args: list[str]) -> dict:
    """This bench's figures from another tree (its code on PYTHONPATH, this script's cases), as JSON."""
    root = Path(tree)
    path = [str(root / "shared" / "src"), *sorted(glob.glob(str(root / "services" / "*" / "src"))),
            *sorted(glob.glob(str(root / "tools" / "*" / "src"))), str(Path(__file__).parent)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    out = subprocess.run([sys.executable, __file__, "--json", *args], env=env, cwd=root, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout)


def _off(names: list[str], seeds: range) -> dict:
    """The figures with cell_analysis's _toward rule switched off (the anchor without --anchor): in this process (a
    worker process would not see the switch)."""
    cell_analysis.TOWARD, was = False, os.environ.get(cell_pool.WORKERS_ENV)
    os.environ[cell_pool.WORKERS_ENV] = "0"
    try:
        return {n: rates(n, seeds, 3) for n in names}
    finally:
        cell_analysis.TOWARD = True
        os.environ.pop(cell_pool.WORKERS_ENV) if was is None else os.environ.update({cell_pool.WORKERS_ENV: was})


def _ratio(new: list[float], was: list[float]) -> str:
    a, b = float(np.median(new)), float(np.median(was))
    return "    -" if np.isnan(a) or np.isnan(b) or b == 0 else f"{a / b:5.2f}"


def _pct(v: list[float]) -> str:
    m = float(np.median(v))
    return "    -" if np.isnan(m) else f"{100 * m:4.1f}%"


def main(argv: list[str]) -> int:
    ap = OneLineParser(prog="bench_crossed_mixes.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="*", help="the cases (default all; --list names them)")
    ap.add_argument("--seeds", type=int, default=30, help="seeds a block, 3 blocks from 3001 (default 30)")
    ap.add_argument("--quick", action="store_true", help="3 blocks of 5 seeds (make bench)")
    ap.add_argument("--anchor", metavar="DIR", help="the tree of the old commit to run the same cells through")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--list", action="store_true", help="name the cases and exit")
    args = ap.parse_args(argv)
    if (refused := cases_refused(ap.prog, args.cases, CASES, args.list)) is not None:
        return refused
    if args.quick:
        args.seeds = 5
    names, seeds = args.cases or list(CASES), range(3001, 3001 + 3 * args.seeds)
    if args.json:
        print(json.dumps({n: rates(n, seeds, 3) for n in names}))
        return 0
    if args.anchor and not (Path(args.anchor) / "services" / "analyzer" / "src").is_dir():
        print(f"{ap.prog}: --anchor {args.anchor}: not a tree of this project (no services/analyzer/src); make one "
              "with: git archive <commit> | tar -x -C DIR", file=sys.stderr)
        return 2
    print(f"median of 3 blocks of {args.seeds} seeds; {loadavg()}")
    old = _anchor(args.anchor, [*names, "--seeds", str(args.seeds)]) if args.anchor else _off(names, seeds)
    print(f"anchor: {args.anchor or 'this tree, the rule for a run a side toward the other level off'}")
    print(f"{'case':38s} false claims  withheld taxes   anchor: false  withheld   ratio: false  withheld")
    for n in names:
        new, was = rates(n, seeds, 3), old[n]
        print(f"{n:38s} {_pct(new['false']):>12s}  {_pct(new['withheld']):>14s}   {_pct(was['false']):>13s}  "
              f"{_pct(was['withheld']):>8s}   {_ratio(new['false'], was['false']):>12s}  "
              f"{_ratio(new['withheld'], was['withheld']):>8s}", flush=True)
    print(loadavg())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
