"""The reading pages in headless Chromium (issue 32): rendered Markdown where a
script in a document never runs, ``[n]`` previews on hover, focus and Escape, the
viewer landing on the outlined line with its sticky bar (next page, zoom), Enter
and Shift+Enter, the answer streamed (status first), a follow-up continuing the
thread, feedback recorded in the audit chain, a keyboard-only run and a phone.

Documents are ingested in-process before the browser starts (no worker needed);
screenshots go to ``test-artifacts/screenshots/reading-*``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Browser, FloatRect, Locator, Page, expect
from pytest_django.live_server_helper import LiveServer

from citations.llm_apps import app_create
from tests import factories
from tests.support.browser import chromium
from tests.support.worker import ARTIFACTS
from tests.web.conftest import PASSWORD, REMOTE_WORK, ingest_now
from tests.web.test_viewer import PDF, PDF_QUESTION

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

SCREENSHOTS = ARTIFACTS / "screenshots"

PRICES = b"""# Price list

## Plans

| plan | monthly price | seats |
|---|---|---|
| Basic | ten euros | 5 |
| Premium | thirty euros | 50 |

The premium plan costs thirty euros per month and includes fifty seats for the whole team.

<script>window.pwned = "script";</script>
<img src="x" onerror="window.pwned = 'img'">

Questions go to [support](javascript:window.pwned='link') or **the sales desk**.
"""
PRICES_QUESTION = "How much does the premium plan cost per month?"
REMOTE_QUESTION = "How many days per week can employees work remotely?"
FOLLOW_UP = "Who approves the schedule?"

# records, across navigations, what the answer area shows as the page changes
OBSERVER = """
document.addEventListener("DOMContentLoaded", () => {
  const turns = document.getElementById("turns");
  if (!turns) return;
  new MutationObserver(() => {
    const turn = turns.lastElementChild;
    if (!turn) return;
    const status = turn.querySelector(".turn-status");
    const answer = turn.querySelector(".answer-text");
    window.record({status: status ? status.textContent : "",
                   answer: answer ? answer.textContent : ""});
  }).observe(turns, {childList: true, subtree: true, characterData: true});
});
"""


@dataclass
class Site:
    url: str


@pytest.fixture
def site(live_server: LiveServer, corpus: Path) -> Site:
    """Acme, member alice, an HR app over a Handbook holding three documents."""
    org = factories.organization("Acme")
    user = get_user_model().objects.create_user("alice", "alice@example.com", PASSWORD)
    org.members.create(user=user, role="editor")
    source = factories.data_source(org, "Handbook")
    app_create(organization=org, name="HR", data_source_names=["Handbook"])
    for name, data in (
        ("prices.md", PRICES),
        ("remote.md", REMOTE_WORK),
        (Path(PDF).name, (corpus / PDF).read_bytes()),
    ):
        record = ingest_now(factories.upload(source, name, data).file)
        assert record.status == "ready", record.error_message
    return Site(url=live_server.url)


@pytest.fixture
def browser(site: Site) -> Iterator[Browser]:
    with chromium() as browser:
        yield browser


def in_db(work: Callable[[], Any]) -> Any:
    """Run database reads in another thread: Playwright's loop runs in this one."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(work).result()


class Shots:
    def __init__(self, name: str) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.name, self.count = f"reading-{name}", 0

    def take(self, page: Page, step: str) -> None:
        self.count += 1
        path = SCREENSHOTS / f"{self.name}-{self.count:02d}-{step}.png"
        page.screenshot(path=str(path), full_page=True)


def _signed_in(
    browser: Browser, site: Site, observed: list[dict] | None = None, **context: Any
) -> Page:
    """alice's page; with ``observed``, every state the answer's stream shows is
    appended to it (the page's OBSERVER script reports through ``record``)."""
    opened = browser.new_context(**context)
    if observed is not None:
        opened.expose_binding("record", lambda _source, state: observed.append(state))
        opened.add_init_script(OBSERVER)
    page = opened.new_page()
    page.goto(f"{site.url}/accounts/login/")
    page.get_by_label("User name").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{site.url}/")
    return page


def _box(locator: Locator) -> FloatRect:
    box = locator.bounding_box()
    assert box is not None, "not displayed"
    return box


def _ask(page: Page, site: Site, question: str) -> None:
    page.goto(f"{site.url}/")
    page.get_by_label("Question", exact=True).fill(question)
    page.get_by_label("Question", exact=True).press("Enter")
    page.wait_for_url(f"{site.url}/answers/**", timeout=60_000)


def _in_viewport(page: Page, selector: str) -> bool:
    return page.evaluate(
        """s => { const r = document.querySelector(s).getBoundingClientRect();
                  return r.top >= 0 && r.bottom <= window.innerHeight; }""",
        selector,
    )


def test_markdown_renders_as_html_and_a_documents_script_never_runs(
    browser: Browser, site: Site
) -> None:
    shots = Shots("markdown")
    page = _signed_in(browser, site, viewport={"width": 1280, "height": 900})
    violations: list[str] = []
    page.on(
        "console", lambda m: violations.append(m.text) if "Content Security" in m.text else None
    )
    _ask(page, site, PRICES_QUESTION)
    card = page.locator("#source-1")
    expect(card.locator("blockquote.passage table")).to_have_count(1)
    expect(card.locator("blockquote.passage th").first).to_have_text("plan")
    expect(card.locator("blockquote.passage mark").first).to_contain_text("premium plan costs")
    # the document's script, event attribute and javascript: link are shown, never run
    expect(card.locator("blockquote.passage")).to_contain_text('<script>window.pwned = "script";')
    assert card.locator("blockquote.passage script, blockquote.passage img").count() == 0
    assert card.locator("blockquote.passage a[href^=javascript]").count() == 0
    expect(card.locator("blockquote.passage strong")).to_have_text("the sales desk")
    shots.take(page, "answer")
    page.locator("#answer-text a.ref").first.click()
    page.wait_for_url("**/sources/1/#*")
    converted = page.locator("#converted")
    expect(converted.locator("h3")).to_have_text("Section “Plans” as converted text")
    expect(converted.locator("table td").nth(4)).to_have_text("thirty euros")
    expect(converted.locator("mark").first).to_be_visible()
    assert page.evaluate("window.pwned") is None
    assert not violations, violations
    shots.take(page, "viewer")
    page.context.close()


def test_a_reference_previews_on_hover_and_on_focus_and_escape_closes(
    browser: Browser, site: Site
) -> None:
    shots = Shots("preview")
    page = _signed_in(browser, site, viewport={"width": 1280, "height": 900})
    _ask(page, site, PDF_QUESTION)
    ref = page.locator("#answer-text a.ref").first
    tip = page.locator(f"#{ref.get_attribute('aria-describedby')}")
    expect(tip).to_have_attribute("role", "tooltip")
    expect(tip).to_be_hidden()
    ref.hover()
    expect(tip).to_be_visible()
    expect(tip).to_contain_text("REPAIR-2022-INV-001_multipage.pdf")
    expect(tip).to_contain_text("page 2")
    crop = tip.locator("img")
    assert "/crop.png?claim=" in (crop.get_attribute("src") or "")
    page.wait_for_function(
        "i => i.complete && i.naturalWidth > 0", arg=crop.element_handle(), timeout=30_000
    )
    shots.take(page, "hover")
    page.keyboard.press("Escape")
    expect(tip).to_be_hidden()
    page.mouse.move(0, 0)
    ref.focus()  # keyboard focus shows it too
    expect(tip).to_be_visible()
    shots.take(page, "focus")
    page.keyboard.press("Escape")
    expect(tip).to_be_hidden()
    ref.click()  # a click still opens the viewer
    page.wait_for_url("**/sources/1/#page-2")
    page.context.close()


def test_the_viewer_lands_on_the_outlined_line_and_its_bar_pages_and_zooms(
    browser: Browser, site: Site
) -> None:
    shots = Shots("viewer")
    page = _signed_in(browser, site, viewport={"width": 1280, "height": 700})
    _ask(page, site, PDF_QUESTION)
    page.locator("#answer-text a.ref").first.click()
    page.wait_for_url("**/sources/1/#page-2")
    page.wait_for_load_state("load")
    assert _in_viewport(page, ".hl-claim"), "scrolled to the first outlined line"
    bar = page.locator("#viewer-bar")
    expect(bar).to_contain_text("REPAIR-2022-INV-001_multipage.pdf")
    expect(bar).to_contain_text("Page 2 of")
    box = bar.bounding_box()
    assert box is not None and box["y"] <= 1, "the bar sticks to the top"
    expect(page.locator(".thumbs a[aria-current=page]")).to_contain_text("Page 2")
    shots.take(page, "landed")
    frame = page.locator("#page-2 .page-frame")
    before = _box(frame)["width"]
    bar.get_by_role("button", name="Zoom in").click()
    expect(page.locator("#zoom-level")).to_have_text("150%")
    assert _box(frame)["width"] > before * 1.2
    shots.take(page, "zoomed")
    bar.get_by_role("link", name="Next page").click()
    page.wait_for_url("**/sources/1/?page=3#page-3")
    expect(page.locator("#page-3 img")).to_be_visible()
    expect(page.locator("#viewer-bar")).to_contain_text("Page 3 of")
    shots.take(page, "next-page")
    page.context.close()


def test_enter_sends_shift_enter_adds_a_line_and_the_status_streams_before_the_answer(
    browser: Browser, site: Site
) -> None:
    shots = Shots("stream")
    seen: list[dict] = []
    page = _signed_in(browser, site, seen, viewport={"width": 1280, "height": 900})
    box = page.get_by_label("Question", exact=True)
    box.click()
    page.keyboard.type("How many days per week")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("can employees work remotely?")
    assert box.input_value() == "How many days per week\ncan employees work remotely?"
    assert page.url == f"{site.url}/", "Shift+Enter did not send"
    shots.take(page, "two-lines")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{site.url}/answers/**", timeout=60_000)
    statuses = [i for i, s in enumerate(seen) if s["status"] == "Searching the documents…"]
    answered = [i for i, s in enumerate(seen) if "two days per week" in s["answer"]]
    assert statuses and answered and statuses[0] < answered[0], seen
    assert any(s["status"] == "Writing the answer…" for s in seen), seen
    expect(page.locator("main > h1")).to_have_text(
        "How many days per week\ncan employees work remotely?"
    )
    assert page.locator("h1").count() == 1, "a document's headings are not the page's"
    # the question stays editable: edit it and ask again from the answer page
    page.get_by_text("Edit the question and ask again").click()
    expect(page.locator(".edit-question textarea")).to_have_value(
        "How many days per week\ncan employees work remotely?"
    )
    shots.take(page, "answer")
    page.context.close()


def test_a_follow_up_streams_in_place_and_continues_the_thread(
    browser: Browser, site: Site
) -> None:
    shots = Shots("follow-up")
    seen: list[dict] = []
    page = _signed_in(browser, site, seen, viewport={"width": 1280, "height": 900})
    _ask(page, site, REMOTE_QUESTION)
    first_url = page.url
    seen.clear()
    page.get_by_label("Follow-up question").fill(FOLLOW_UP)
    page.get_by_label("Follow-up question").press("Enter")
    turn = page.locator("#turns .turn").last
    expect(turn.locator("h2")).to_have_text(FOLLOW_UP)
    expect(turn.get_by_role("link", name="Open this answer with its sources")).to_be_visible(
        timeout=60_000
    )
    expect(turn.locator(".answer-text a.ref").first).to_be_visible()
    assert page.url == first_url, "the follow-up is answered in place"
    shown = [state for state in seen if state["status"] or state["answer"]]
    assert shown[0] == {"status": "Searching the documents…", "answer": ""}, seen
    expect(page.get_by_label("Follow-up question")).to_have_value("")
    shots.take(page, "streamed")
    turn.get_by_role("link", name="Open this answer with its sources").click()
    page.wait_for_url(f"{site.url}/answers/**")
    expect(page.locator(".conversation")).to_contain_text(REMOTE_QUESTION)
    expect(page.locator("main > h1")).to_have_text(FOLLOW_UP)
    shots.take(page, "second-answer")

    def threads() -> set:
        from citations.models import Message

        return set(
            Message.objects.filter(query__question__in=[REMOTE_QUESTION, FOLLOW_UP]).values_list(
                "thread_id", flat=True
            )
        )

    assert len(in_db(threads)) == 1
    page.context.close()


def test_feedback_is_recorded_in_the_audit_chain(browser: Browser, site: Site) -> None:
    shots = Shots("feedback")
    page = _signed_in(browser, site, viewport={"width": 1280, "height": 900})
    _ask(page, site, REMOTE_QUESTION)
    form = page.locator("#feedback")
    form.get_by_label("Comment (optional)").fill("It should say who approves.")
    form.get_by_role("button", name="Not helpful").click()
    expect(page.locator(".messages")).to_contain_text("Thank you: your feedback is recorded.")
    expect(page.locator("#feedback-recorded")).to_contain_text("not helpful")
    shots.take(page, "recorded")

    def chained() -> tuple:
        from audit.ledger import ledger_verify
        from audit.models import EvidenceEntry
        from citations.models import AnswerFeedback

        feedback = AnswerFeedback.objects.get()
        entry = EvidenceEntry.objects.get(
            record_table="citations_answerfeedback", record_id=str(feedback.pk)
        )
        return feedback.rating, feedback.comment, entry.seq > 0, ledger_verify().ok

    assert in_db(chained) == ("not_helpful", "It should say who approves.", True, True)
    page.context.close()


def test_keyboard_only_ask_preview_and_viewer(browser: Browser, site: Site) -> None:
    shots = Shots("keyboard")
    page = _signed_in(browser, site, viewport={"width": 1280, "height": 900})
    page.goto(f"{site.url}/")
    assert page.evaluate("document.activeElement.id") == "id_question"  # autofocus
    page.keyboard.type(PDF_QUESTION)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{site.url}/answers/**", timeout=60_000)
    for _ in range(40):  # Tab until the first [n]
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.classList.contains('ref')"):
            break
    else:
        pytest.fail("no [n] reachable by Tab")
    described = page.evaluate("document.activeElement.getAttribute('aria-describedby')")
    expect(page.locator(f"#{described}")).to_be_visible()
    shots.take(page, "preview")
    page.keyboard.press("Escape")
    expect(page.locator(f"#{described}")).to_be_hidden()
    page.keyboard.press("Enter")
    page.wait_for_url("**/sources/1/#page-2")
    # focus starts at the cited page (the fragment): back up to the bar's Next page
    names = []
    for _ in range(20):
        page.keyboard.press("Shift+Tab")
        names.append(page.evaluate("document.activeElement.textContent.trim()"))
        if names[-1] == "Next page":
            break
    assert names[-1] == "Next page", names
    page.keyboard.press("Enter")
    page.wait_for_url("**?page=3#page-3")
    shots.take(page, "next-page")
    page.context.close()


def test_on_a_phone_the_crop_comes_first_and_nothing_scrolls_sideways(
    browser: Browser, site: Site
) -> None:
    shots = Shots("phone")
    page = _signed_in(
        browser, site, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    )
    _ask(page, site, PDF_QUESTION)
    assert page.evaluate("document.documentElement.scrollWidth") <= 391
    ref = page.locator("#answer-text a.ref").first
    tip = page.locator(f"#{ref.get_attribute('aria-describedby')}")
    ref.tap()  # the first tap previews, the second opens the viewer
    expect(tip).to_be_visible()
    shots.take(page, "tap-preview")
    ref.tap()
    page.wait_for_url("**/sources/1/#page-2")
    crop = page.locator("#crop img")
    expect(crop).to_be_visible()
    page.wait_for_function(
        "i => i.complete && i.naturalWidth > 0", arg=crop.element_handle(), timeout=30_000
    )
    crop_top = _box(crop)["y"]
    assert crop_top < _box(page.locator("#page-2"))["y"], "the crop comes first"
    assert page.evaluate("document.documentElement.scrollWidth") <= 391
    shots.take(page, "viewer")
    page.context.close()
