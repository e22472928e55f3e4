"""What the HTML report shows around the numbers: provenance per node and side, placements."""

from __future__ import annotations

import httpx


def _table(page: str, table_id: str) -> str:
    start = page.index(f'id="{table_id}"')
    return page[start:page.index("</table>", start)]


def test_provenance_per_node_and_side(served):
    page = httpx.get(f"{served.url}/report/synthetic", timeout=120).text
    prov = _table(page, "provenance-table")
    assert prov.count("<tr>") == 1 + 2 * 8  # header + host and pod of 8 nodes
    assert "6.1.0-28-amd64" in prov and "AMD EPYC 7B13" in prov and "Debian GNU/Linux 12 (bookworm)" in prov
    assert "sysbench 1.0.18" in prov and "sysbench 1.0.20" in prov  # node-c's host ran another build


def test_placements_of_the_campaigns_tests_only(served):
    page = httpx.get(f"{served.url}/report/synthetic", timeout=120).text
    places = _table(page, "placement-table")
    assert "web-1" in places and "87.5" in places and "node-a 40.0" in places
    assert "unrelated-test" not in places
    cp = httpx.get(f"{served.url}/report/cp", timeout=120).text
    assert 'id="placement-table"' not in cp and "No placement of a pod" in cp
