"""Planted campaigns whose sides each hold a second group of runs toward the other side's level (stats/verdict.py's
groups_cross): two machines (the slow one at 35% or 80%) mixed 8/2 on the host and 2/8 on the pod (or 9/1 and 1/9: one
run a side at the other side's level), or 2 runs a side part of the way toward the other side (outlier runs), with a
pod tax or none, through compare_campaign (a real DuckDB file, tests/analysis/analysis_synth.py).
Per case: the verdicts (right, wrong direction, false claims, withheld) and how many span sentences ("Pod slower
than host: 9.5% to 68.6% (...") hold the planted size, of how many, with the median span width.

The anchor, on the same sentences in the same run: the span between the point estimates (the ratio of medians and
the ratio at each level, which the sentence also prints), the span the sentence gave before it joined their 95%
intervals. The counts are fixed by the seeds (the same every run); no assertions.

    .venv/bin/python bench/bench_crossed_spans.py [--seeds N] [--quick] [case ...]

Default: every case on seeds 2001-2200 (about 2 minutes on 2 cores); --quick: 20 seeds; --list names the cases.
"""
from __future__ import annotations

import re
import sys
from collections import Counter

import numpy as np
from anchor import cases_refused, line, loadavg
from bench_planted_verdicts import cell, noise, planted, score
from podtax.oneline_args import OneLineParser


def heavy(rng, scale, n):
    return scale * np.exp(0.02 * rng.standard_t(3, n))


def machines(r, slow=0.35, hib=True, draw=noise, main=8):
    """``main`` (8) host runs on the fast machine and the rest of 10 on the slow one, the pod the other way round (2
    and 8), the pod ``r`` times the host on each."""
    def f(rng):
        fast = 1000.0 if hib else 100.0
        other = fast * slow if hib else fast / slow
        host = np.r_[draw(rng, fast, main), draw(rng, other, 10 - main)]
        pod = np.r_[draw(rng, fast * r, 10 - main), draw(rng, other * r, main)]
        return cell("node-a", host, pod, hib), r
    return f


def part_way(r, hib=True, share=None):
    """The pod ``r`` times the host; 2 runs a side lie ``share`` of the way toward the other side (None: 15-40% of
    the level, drawn), as outlier runs."""
    def f(rng):
        host, pod = noise(rng, 1000.0, 8), noise(rng, 1000.0 * r, 8)
        if share is None:
            step = rng.uniform(0.15, 0.40, 2) * (1 if r < 1 else -1)
            host_group = 1000.0 * (1 - step) * np.exp(rng.normal(0, 0.02, 2))
            pod_group = 1000.0 * r * (1 + step) * np.exp(rng.normal(0, 0.02, 2))
        else:
            host_group = noise(rng, 1000.0 * (1 + share * (r - 1)), 2)
            pod_group = noise(rng, 1000.0 * (r + share * (1 - r)), 2)
        host, pod = np.r_[host, host_group], np.r_[pod, pod_group]
        if hib:
            return cell("node-a", host, pod), r
        return cell("node-a", 1e5 / host, 1e5 / pod, hib=False), 1 / r  # a duration: the same runs, inverted
    return f


CASES = {
    "machines no tax": machines(1.0), "machines 10% slow": machines(0.9), "machines 20% slow": machines(0.8),
    "machines 30% slow": machines(0.7), "machines latency 10% slow": machines(1.1, hib=False),
    "machines latency no tax": machines(1.0, hib=False), "machines at 80% 10% slow": machines(0.9, slow=0.8),
    "machines t(3) 10% slow": machines(0.9, draw=heavy), "machines t(3) no tax": machines(1.0, draw=heavy),
    "machines 9/1 no tax": machines(1.0, main=9), "machines 9/1 10% slow": machines(0.9, main=9),
    "machines 9/1 latency no tax": machines(1.0, hib=False, main=9),
    "machines 9/1 at 80% no tax": machines(1.0, slow=0.8, main=9),
    "machines 9/1 at 80% 10% slow": machines(0.9, slow=0.8, main=9),
    "60% of the way 30% slow": part_way(0.7, share=0.6), "60% of the way 20% slow": part_way(0.8, share=0.6),
    "60% of the way 10% slow": part_way(0.9, share=0.6), "15-40% toward 30% slow": part_way(0.7),
    "15-40% toward 20% slow": part_way(0.8), "15-40% toward latency 30% slow": part_way(0.7, hib=False),
}
SPAN = re.compile(r"^\w+ (?:slower|faster) than \w+: ([\d.]+)% to ([\d.]+)% ")
LEVEL = re.compile(r"([\d.]+)(?: \((?:95% CI [\d.]+ to [\d.]+|no interval)\))? at the \w+ (?:main )?runs' level")


def run(names: list[str], seeds: range) -> Counter:
    print(f"{'case':32s} right wrongdir false withheld  spans  covered  width  anchor:covered width")
    totals: Counter = Counter()
    for name in names:
        t: Counter = Counter()
        widths: list[float] = []
        anchor_widths: list[float] = []
        for c, r, _ in planted(lambda rng, case=CASES[name]: [case(rng)], name, seeds):
            t[score(c.verdict, c.higher_is_better, r)] += 1
            if not (m := SPAN.match(c.sentence)):
                continue
            size, (low, high) = abs(r - 1) * 100, (float(m[1]), float(m[2]))
            points = [abs(float(x) - 1) * 100 for x in LEVEL.findall(c.sentence)] + [abs(c.ratio - 1) * 100]
            t["spans"] += 1
            t["covered"] += low - 0.05 <= size <= high + 0.05  # the sentence's rounding
            t["anchor covered"] += min(points) - 0.05 <= size <= max(points) + 0.05
            widths.append(high - low)
            anchor_widths.append(max(points) - min(points))
        totals.update(t)

        def mid(w: list[float]) -> str:
            return f"{np.median(w):5.1f}" if w else "    -"
        print(f"{name:32s} {t['right']:5d} {t['wrongdir']:8d} {t['false']:5d} {t['withheld']:8d}  {t['spans']:5d}  "
              f"{t['covered']:7d}  {mid(widths)}  {t['anchor covered']:14d} {mid(anchor_widths)}", flush=True)
    return totals


def main(argv: list[str]) -> int:
    ap = OneLineParser(prog="bench_crossed_spans.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="*", help="the cases (default all; --list names them)")
    ap.add_argument("--seeds", type=int, default=200, help="how many seeds from 2001 (default 200)")
    ap.add_argument("--quick", action="store_true", help="20 seeds (make bench)")
    ap.add_argument("--list", action="store_true", help="name the cases and exit")
    args = ap.parse_args(argv)
    if (refused := cases_refused(ap.prog, args.cases, CASES, args.list)) is not None:
        return refused
    seeds = range(2001, 2001 + (20 if args.quick else args.seeds))
    t = run(args.cases or list(CASES), seeds)
    print(line(f"span sentences holding the planted size, {len(seeds)} seeds, {t['spans']} sentences",
               t["covered"], "sentences", "the point estimates' span, same sentences", t["anchor covered"], loadavg()))
    print(f"verdicts: right {t['right']}, wrong direction {t['wrongdir']}, false claims {t['false']}, withheld "
          f"{t['withheld']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
