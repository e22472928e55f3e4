"""How often BIMODAL fires: planted two-mode sides (detection) and unimodal sides (false alarms), before
and after the separated-modes rule (stats/modes.py). "before" is the dip rule alone (dip p < 0.05 with
Sarle's coefficient over 5/9, or p < 0.01; not at the printing resolution); "after" is check_unimodality.

    .venv/bin/python bench/sim_bimodal.py [--samples 2000] [--seed 1]
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from podtax.oneline_args import OneLineParser
from podtax_analyzer.stats.modes import check_unimodality


def _rates(draw: Callable[[], np.ndarray], samples: int) -> tuple[float, float]:
    before = after = 0
    for _ in range(samples):
        x = draw()
        u = check_unimodality(x)
        after += u.bimodal
        before += u.bimodal and u.separated is None
    return before / samples, after / samples


def main() -> None:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    unimodal: dict[str, Callable[[int], np.ndarray]] = {
        "normal": lambda n: rng.normal(100, 5, n),
        "lognormal": lambda n: np.exp(rng.normal(0, 0.5, n)),
        "exponential": lambda n: rng.exponential(1, n),
        "t3": lambda n: 100 + rng.standard_t(3, n),
        "uniform": lambda n: rng.uniform(50, 100, n),
    }
    print("false alarms (unimodal): before -> after")
    for name, f in unimodal.items():
        cells = []
        for n in (10, 13, 20, 40):
            b, a = _rates(lambda f=f, n=n: f(n), args.samples)
            cells.append(f"n={n} {b:.2%} -> {a:.2%}")
        print(f"  {name:12s} " + "; ".join(cells))

    def planted(n1: int, n2: int, sep: float, cv: float) -> np.ndarray:
        return np.concatenate([100 * np.exp(rng.normal(0, cv, n1)), 100 * sep * np.exp(rng.normal(0, cv, n2))])

    print("detection (planted modes n1 at 100, n2 at 100 x sep, noise cv): before -> after")
    for n1, n2 in ((10, 3), (17, 3), (37, 3), (10, 4), (12, 2), (10, 10), (6, 6)):
        cells = []
        for sep, cv in ((1.3, 0.01), (1.3, 0.02), (1.3, 0.03), (1.2, 0.01), (1.1, 0.01)):
            b, a = _rates(lambda n1=n1, n2=n2, sep=sep, cv=cv: planted(n1, n2, sep, cv), args.samples // 2)
            cells.append(f"{sep:.1f}x cv {cv:.0%} {b:.1%} -> {a:.1%}")
        print(f"  {n1:2d}/{n2:<2d} " + "; ".join(cells))


if __name__ == "__main__":
    main()
