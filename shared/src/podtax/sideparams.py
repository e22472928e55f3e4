"""Two sides that ran different params: for one node and test, params that only one side ran and others
that only the other side ran (an import manifest with bs=4k on its host rows and bs=64k on its pod rows).
Their runs fall into different cells, one side each, and no cell gets a ratio: more runs of the same
params would not help, so the import warns and the report says which params differ instead of asking for
runs. Params are compared as their canonical keys (podtax.templates.params_key: `bs=4k rw=randread`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from podtax import sides


def _pairs(key: str) -> dict[str, str]:
    return dict(token.partition("=")[::2] for token in key.split())


def _shown(keys: Collection[str], names: list[str]) -> str:
    """The values of ``names`` in each key: "bs=4k", or "bs=4k or bs=8k" for several keys."""
    texts = [" ".join(f"{n}={_pairs(k).get(n, '(unset)')}" for n in names) for k in sorted(keys)]
    return " or ".join(dict.fromkeys(texts))


def apart(baseline_only: Collection[str], candidate_only: Collection[str]) -> tuple[str, str] | None:
    """(what the baseline ran, what the candidate ran) in the params that differ, e.g. ("bs=4k", "bs=64k"),
    given the params keys of one node and test that only the baseline side ran and those only the
    candidate side ran; None unless both exist."""
    if not baseline_only or not candidate_only:
        return None
    every = [_pairs(k) for k in (*baseline_only, *candidate_only)]
    names = sorted({n for p in every for n in p if len({q.get(n) for q in every}) > 1})
    return _shown(baseline_only, names), _shown(candidate_only, names)


def one_sided(keys_by_side: dict[str, set[str]], baseline: str, candidate: str) -> tuple[str, str] | None:
    """apart() of the params keys each side ran (``keys_by_side``: env -> keys) that the other did not."""
    ran_b, ran_c = keys_by_side.get(baseline, set()), keys_by_side.get(candidate, set())
    return apart(ran_b - ran_c, ran_c - ran_b)


def manifest_warnings(rows: Iterable[tuple[str, str, str, str]]) -> list[str]:
    """One sentence per node and test of an import manifest whose sides ran different params; ``rows`` are
    (node, test, env, params key)."""
    keys: dict[tuple[str, str], dict[str, set[str]]] = {}
    for node, test, env, key in rows:
        keys.setdefault((node, test), {}).setdefault(env, set()).add(key)
    out = []
    for (node, test), by_env in keys.items():
        envs = sorted(by_env, key=sides.rank)
        for i, b in enumerate(envs):
            for c in envs[i + 1:]:
                if (found := one_sided(by_env, b, c)) is not None:
                    out.append(f"{test} on {node}: the {b} rows ran {found[0]} and the {c} rows {found[1]}, so "
                               f"their runs fall into different cells and none gets a {c}/{b} ratio; give both "
                               f"sides the same params (the manifest's params column)")
    return out
