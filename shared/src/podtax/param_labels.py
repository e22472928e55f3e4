"""How a cell's params read in a label: the one rule for every place a person reads them.

A label (the text report's headings and rows, its phase table, the summary sentences and failed-run warnings, the
HTML report's matrix, headings and captions, the workbook's matrix, `podtax compare` and its cells in one campaign
only, `podtax results` and `podtax scores`) shows a cell's params key (templates.params_key, `k=v k=v`) without the
params that are empty in EVERY cell of its test in what is shown: volume-churn's `namespace= plugin_id=` said
nothing (pU, session 53). A param empty in one cell and absent or set in another stays: `tag= threads=4` and
`threads=4` are two cells and must read apart (0e1c01af reverted a rule that dropped every empty param). Leaving out
a token that every key of a test has cannot make two keys alike; a guard keeps the full keys should it ever (a value
with a space could make a token look like `k=`). Only a param of the test's template is left out, one token each: a
value `é =ü b=` keeps its `b=`, no param of the test (review r1 of 3d9c3c3e). The key itself (JSON, the API,
exports, data tables, lookups) keeps every param.

The labels are computed ONCE over everything a report (its cells, failed runs and phase rows) or a comparison (both
campaigns' cells) shows, and every view of it reads that map (CampaignReport.params_labels,
CampaignChange.params_labels): labels computed over different sets of cells made two cells read alike, a heading
'count=20' (of 'count=20 namespace= plugin_id=') and a failed run's warning 'count=20' (of the key 'count=20').
"""

from __future__ import annotations

from collections.abc import Iterable

from podtax import templates

Labels = dict[str, dict[str, str]]  # test -> params key -> the params as a label shows them (JSON's shape too)


def _blanks(test: str) -> set[str]:
    """The tokens a key of ``test`` has for a param of its template with an empty value (`namespace=`); none for
    a test podtax has no template of."""
    template = templates.REGISTRY.get(test)
    return {f"{name}=" for name in template.params.model_fields} if template else set()


def _without(key: str, blank: set[str]) -> str:
    """``key`` without one token of each param in ``blank``."""
    left, out = set(blank), []
    for token in key.split(" "):
        if token in left:
            left.discard(token)
        else:
            out.append(token)
    return " ".join(out)


def params_labels(cells: Iterable[tuple[str, str]]) -> Labels:
    """(test, params key) of every cell shown together -> each key as its label shows it: without the params whose
    value is empty in every cell of that test."""
    by_test: dict[str, set[str]] = {}
    for test, key in cells:
        by_test.setdefault(test, set()).add(key)
    out: Labels = {}
    for test, keys in by_test.items():
        blank = set.intersection(_blanks(test), *(set(key.split(" ")) for key in keys))
        labels = {key: _without(key, blank) for key in keys}
        if len(set(labels.values())) < len(keys):  # two keys would read alike: show them whole
            labels = {key: key for key in keys}
        out[test] = labels
    return out


def label(labels: Labels, test: str, key: str) -> str:
    """``key`` of ``test`` as ``labels`` (params_labels of what is shown) show it; the key whole when it is not
    there (a report from an analyzer without the map)."""
    return labels.get(test, {}).get(key, key)
