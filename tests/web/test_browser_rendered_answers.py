"""No raw Markdown in an answer (issue 55), in headless Chromium: a quoted link is a
link, a quoted table row reads as its cells, no backslash escape shows, and a
document's script or ``javascript:`` link quoted in an answer never runs.

Documents (the shared corpus's, and one hostile Markdown) are ingested in-process
before the browser starts; screenshots go to ``test-artifacts/screenshots/render-*``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Browser, Page, expect
from pytest_django.live_server_helper import LiveServer

from citations.llm_apps import app_create
from tests import factories
from tests.support.browser import chromium
from tests.support.worker import ARTIFACTS
from tests.web.conftest import PASSWORD, ingest_now
from tests.web.test_rendered_answers import (
    LINK_QUESTION,
    LINK_WORDS,
    RAW,
    ROW_QUESTION,
    ROW_WORDS,
    SLIDES,
    TABLE,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

SCREENSHOTS = ARTIFACTS / "screenshots"
HOSTILE = (
    b"# Escalations\n\nThe escalation desk answers at [the hotline](javascript:window.pwned='link')"
    b" on weekdays <script>window.pwned='script'</script> from nine to five.\n"
)
HOSTILE_QUESTION = "When does the escalation desk answer at the hotline?"


@pytest.fixture
def site(live_server: LiveServer, corpus: Path) -> str:
    org = factories.organization("Acme")
    user = get_user_model().objects.create_user("alice", "alice@example.com", PASSWORD)
    org.members.create(user=user, role="editor")
    source = factories.data_source(org, "Handbook")
    app_create(organization=org, name="HR", data_source_names=["Handbook"])
    documents = [(Path(p).name, (corpus / p).read_bytes()) for p in (TABLE, SLIDES)]
    for name, data in [*documents, ("escalations.md", HOSTILE)]:
        record = ingest_now(factories.upload(source, name, data).file)
        assert record.status == "ready", record.error_message
    return live_server.url


@pytest.fixture
def page(site: str) -> Iterator[Page]:
    with chromium() as browser:
        yield _signed_in(browser, site)


def _signed_in(browser: Browser, site: str) -> Page:
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.goto(f"{site}/accounts/login/")
    page.get_by_label("User name").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{site}/")
    return page


def _answer(page: Page, site: str, question: str, shot: str) -> str:
    """Ask ``question`` as a reader does; the answer page's answer, as its text reads."""
    page.goto(f"{site}/")
    page.get_by_label("Question", exact=True).fill(question)
    page.get_by_label("Question", exact=True).press("Enter")
    page.wait_for_url(f"{site}/answers/**", timeout=60_000)
    answer = page.locator("#answer-text")
    expect(answer.locator("a.ref").first).to_be_visible()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"render-{shot}.png"), full_page=True)
    text = answer.inner_text()
    for raw in RAW:
        assert raw not in text, (raw, text)
    return text


def test_no_raw_markdown_in_an_answer(page: Page, site: str) -> None:
    text = _answer(page, site, LINK_QUESTION, "01-link")
    assert LINK_WORDS in text
    link = page.locator("#answer-text a[href='https://pymupdf.readthedocs.io']")
    expect(link).to_have_text("Find out more")
    text = _answer(page, site, ROW_QUESTION, "02-row")
    assert ROW_WORDS in text, text
    expect(page.locator("#answer-text strong").first).to_have_text("Metals")
    text = _answer(page, site, HOSTILE_QUESTION, "03-hostile")
    assert "the hotline" in text and "<script>" in text  # the document's words, as text
    assert page.locator("#answer-text script, #answer-text a[href^='javascript']").count() == 0
    assert page.evaluate("window.pwned") is None
    passage = page.locator("#source-1 blockquote.passage")
    expect(passage).to_contain_text("answers at the hotline on weekdays")  # its words only
    assert passage.locator("script, a[href^='javascript']").count() == 0
    page.goto(f"{site}/history/")
    page.screenshot(path=str(SCREENSHOTS / "render-04-history.png"), full_page=True)
    history = page.locator("ul.history").inner_text()
    assert LINK_WORDS in history and ROW_WORDS in history
    for raw in RAW:
        assert raw not in history, (raw, history)
