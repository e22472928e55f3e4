"""The served HTML report in a real browser: headless Chromium (Debian's `chromium` package) driven
by Playwright. Never `playwright install`: the browser is the system one, found on PATH."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest

from tests.report.conftest import headline

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]
ARTIFACTS = Path(__file__).parents[1] / "artifacts"

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make sysdeps)")


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


def _open(browser, url: str):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    resp = page.goto(url)
    assert resp is not None and resp.status == 200
    return page, problems, requests


def test_report_in_chromium(served, browser):
    rep = httpx.get(f"{served.url}/api/campaigns/synthetic/comparisons", timeout=120).json()
    page, problems, requests = _open(browser, f"{served.url}/report/synthetic")
    # the matrix: one cell per node and test (primary metric) with the API's values
    primary = headline(rep["cells"])
    assert {c["test"] for c in primary} == {c["test"] for c in rep["cells"]}
    shown = page.eval_on_selector_all(
        "#matrix td.mcell[data-cell]",
        "els => els.map(e => ({id: e.dataset.cell, node: e.dataset.node, test: e.dataset.test, "
        "ratio: e.dataset.ratio, text: e.innerText, flags: e.dataset.flags}))")
    assert sorted((s["node"], s["test"]) for s in shown) == sorted((c["node"], c["test"]) for c in primary)
    by_id = {s["id"]: s for s in shown}
    for c in primary:
        s = by_id[c["id"]]
        if c["ratio"] is None:
            assert s["ratio"] == "" and "withheld" in s["text"]
        else:
            assert float(s["ratio"]) == c["ratio"]
            ci = "no interval" if c["ci_low"] is None else f"[{c['ci_low']:.3f}, {c['ci_high']:.3f}]"  # INSUFFICIENT
            assert f"{c['ratio']:.3f}" in s["text"] and ci in s["text"]
        assert s["flags"].split() == c["flags"] and all(f in s["text"] for f in c["flags"])
        assert c["verdict"] in s["text"]
        # the anchor leads to the cell's details, whose strip plot has one marker per run
        page.click(f'#matrix td[data-cell="{c["id"]}"] a')
        assert page.evaluate("location.hash") == f"#cell-{c['id']}"
        assert page.locator(f"#cell-{c['id']} svg.strip .pt").count() == c["n_host"] + c["n_pod"]
        assert page.locator(f"#cell-{c['id']} svg.strip .side-0 .pt").count() == c["n_host"]
    # runs over time: every run of every primary cell, per node
    assert page.locator("svg.timeline .tp").count() == sum(c["n_host"] + c["n_pod"] for c in primary)
    # usable at 1280 px: the page itself never scrolls sideways (wide tables scroll in their box)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    assert all(u.startswith(served.url) for u in requests), requests  # nothing fetched from elsewhere
    assert problems == []
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report-synthetic.png"
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(shot), full_page=False)
    print(f"\nscreenshot of the report: {shot}")
    assert shot.stat().st_size > 10_000
    page.close()


def test_compare_section_in_chromium(served, browser):
    page, problems, _ = _open(browser, f"{served.url}/report/shifted?compare=base")
    rows = page.eval_on_selector_all("#compare tbody tr", "els => els.map(e => e.innerText)")
    assert len(rows) == 6 and all("worsened" in r for r in rows)
    assert problems == []
    page.close()
