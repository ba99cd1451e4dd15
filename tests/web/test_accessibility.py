"""The accessibility baseline (issue 32): axe-core finds no WCAG 2.0/2.1 A and AA
violations on the end-user pages, on a desktop and on a phone.

Pages: the login page, the ask page, an answer with ``[n]`` markers and its preview
tooltip open (then with its retrieved-but-not-cited passages open), the source
viewer for a PDF and for a Markdown source, the library and the history. axe-core
is vendored (``tests/support/axe``, see its README) and evaluated through
Playwright: the pages' nonce-based CSP blocks ``add_script_tag`` (an inline script)
but not an evaluation from the driver. Screenshots go to
``test-artifacts/screenshots/axe-*``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.web import test_browser_reading as reading
from tests.web.conftest import PASSWORD
from tests.web.test_browser_reading import PRICES_QUESTION, SCREENSHOTS, Site, _ask
from tests.web.test_viewer import PDF_QUESTION

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

# the reading tests' fixtures: alice's Handbook (prices.md, remote.md, a PDF), Chromium
site = reading.site
browser = reading.browser

AXE = Path(__file__).resolve().parents[1] / "support" / "axe" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
VIEWPORTS: dict[str, dict[str, Any]] = {
    "desktop": {"viewport": {"width": 1280, "height": 900}},
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True},
}

RUN = """async tags => {
  const result = await axe.run(document, {runOnly: {type: "tag", values: tags}});
  return result.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({target: n.target.join(" "), summary: n.failureSummary})),
  }));
}"""


def _axe(page: Page) -> list[dict[str, Any]]:
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))
    assert page.evaluate("typeof window.axe.run") == "function", "axe not injected"
    return page.evaluate(RUN, TAGS)


def _report(found: dict[str, list[dict[str, Any]]]) -> str:
    lines = []
    for name, violations in found.items():
        for v in violations:
            lines.append(f"{name}: {v['id']} ({v['impact']}) {v['help']}")
            for node in v["nodes"]:
                summary = " | ".join(node["summary"].splitlines())
                lines.append(f"    {node['target']}: {summary}")
    return "\n".join(lines)


@pytest.mark.parametrize("device", list(VIEWPORTS))
def test_axe_finds_no_violations_on_the_end_user_pages(
    browser: Browser, site: Site, device: str
) -> None:
    page = browser.new_context(**VIEWPORTS[device]).new_page()
    found: dict[str, list[dict[str, Any]]] = {}

    def check(name: str) -> None:
        page.wait_for_load_state("load")
        found[name] = _axe(page)
        path = SCREENSHOTS / f"axe-{device}-{len(found):02d}-{name}.png"
        page.screenshot(path=str(path), full_page=True)

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.goto(f"{site.url}/accounts/login/")
    check("login")
    page.get_by_label("User name").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{site.url}/")
    check("ask")

    _ask(page, site, PDF_QUESTION)
    ref = page.locator("#answer-text a.ref").first
    tip = page.locator(f"#{ref.get_attribute('aria-describedby')}")
    if device == "phone":
        ref.tap()  # the first tap previews
    else:
        ref.hover()
    expect(tip).to_be_visible()
    check("answer-preview")
    if device == "phone":
        ref.tap()  # the second opens the viewer
    else:
        ref.click()
    page.wait_for_url("**/sources/1/#page-2")
    expect(page.locator("#viewer-bar")).to_contain_text("REPAIR-2022-INV-001_multipage.pdf")
    check("source-pdf")
    page.go_back()  # the answer again, with its retrieved-but-not-cited passages open
    page.locator("#uncited > summary").click()
    expect(page.locator("#uncited blockquote.passage").first).to_be_visible()
    check("answer-uncited")

    _ask(page, site, PRICES_QUESTION)
    page.locator("#answer-text a.ref").first.click()
    page.wait_for_url("**/sources/1/#*")
    expect(page.locator("#converted table")).to_have_count(1)
    check("source-markdown")

    page.goto(f"{site.url}/library/")
    expect(page.locator("main")).to_contain_text("prices.md")
    check("library")
    page.goto(f"{site.url}/history/")
    expect(page.locator("main")).to_contain_text(PRICES_QUESTION)
    check("history")
    page.context.close()

    assert not any(found.values()), f"axe violations ({device}):\n{_report(found)}"
