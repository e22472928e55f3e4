"""The HTML report runs no script and fetches nothing (its design), and every text from the bus is escaped; a
Content-Security-Policy in the page itself makes that hold even if an escape were ever missed, for the page the
API serves and the file `podtax report --html` saves (audit hS): a script put into the page does not run, and the
page's own inline CSS and SVG still render without a violation. Headless Chromium (Debian's), a real served report
of hostile names."""

from __future__ import annotations

import shutil

import pytest

from tests.report.conftest import serve_batches
from tests.report.test_report_hostile import FORMULA, result_events

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make sysdeps)")
INJECT = """() => {
  const s = document.createElement('script');
  s.textContent = 'window.ran = 1';
  document.body.appendChild(s);
  return window.ran === 1;
}"""


def test_a_script_put_into_the_report_does_not_run(tmp_path) -> None:
    host = [1000.0 + i for i in range(6)]
    batch = result_events("evil", host, [v * 0.97 for v in host], node=FORMULA, tool_version="<b>1.0</b>")
    with serve_batches(tmp_path, [batch]) as url, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page()
            problems: list[str] = []
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            assert page.goto(f"{url}/report/evil").status == 200
            assert page.locator("#matrix td.mcell").count() == 1  # the page itself renders ...
            assert problems == [], problems  # ... its inline CSS and SVG within the policy
            assert page.evaluate(INJECT) is False, "an inline script ran in the report"
        finally:
            browser.close()
