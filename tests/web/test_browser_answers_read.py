"""Answers that read the documents (issue 55), as a reader sees them in headless
Chromium: a question the handbook does not answer cites nothing and says so; a
question about one region of an 80-page report quotes that region's page first.
Screenshots go to ``test-artifacts/screenshots/answers-*``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from citations.composition import NOT_FOUND
from citations.llm_apps import app_create
from citations.models import ClaimCitation, QueryExecution
from documents.demo import demo_documents_write
from tests import factories
from tests.support.browser import chromium
from tests.support.claims import claim_page
from tests.support.worker import ARTIFACTS
from tests.web.conftest import PASSWORD, ingest_now
from tests.web.test_browser_rendered_answers import _signed_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

SCREENSHOTS = ARTIFACTS / "screenshots"
REGIONS = 80
T = TypeVar("T")


def _regions_pdf() -> bytes:
    """A report of a page per region, each with its own staff count: neighbouring
    pages read alike and differ in their numbers only."""
    import pymupdf

    document = pymupdf.open()
    for n in range(1, REGIONS + 1):
        page = document.new_page()
        page.insert_text((72, 72), f"Region {n}", fontsize=16)
        text = (
            f"The office of region {n} reports its yearly figures. Region {n} has "
            f"{400 + n * 7 % 150} staff and {n * 3 % 40 + 5} sites. Its budget grew by "
            f"{n % 9} percent over the year."
        )
        page.insert_textbox(pymupdf.Rect(72, 100, 520, 400), text, fontsize=11)
    return document.tobytes()


@pytest.fixture
def site(live_server: LiveServer, tmp_path: Path) -> str:
    org = factories.organization("Acme")
    user = get_user_model().objects.create_user("alice", "alice@example.com", PASSWORD)
    org.members.create(user=user, role="editor")
    handbook = factories.data_source(org, "Handbook")
    reports = factories.data_source(org, "Reports")
    app_create(organization=org, name="HR", data_source_names=["Handbook", "Reports"])
    files = [(handbook, p.name, p.read_bytes()) for p in demo_documents_write(tmp_path)]
    files.append((reports, "regions.pdf", _regions_pdf()))
    for source, name, data in files:
        record = ingest_now(factories.upload(source, name, data).file)
        assert record.status == "ready", record.error_message
    return live_server.url


@pytest.fixture
def page(site: str) -> Iterator[Page]:
    with chromium() as browser:
        yield _signed_in(browser, site)


def _ask(page: Page, site: str, question: str, shot: str) -> str:
    page.goto(f"{site}/")
    page.get_by_label("Question", exact=True).fill(question)
    page.get_by_label("Question", exact=True).press("Enter")
    page.wait_for_url(f"{site}/answers/**", timeout=60_000)
    answer = page.locator(".answer-text").first
    expect(answer).not_to_be_empty()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"answers-{shot}.png"), full_page=True)
    return answer.inner_text()


def _in_thread(read: Callable[[], T]) -> T:
    """Database reads off the thread the browser's event loop runs on (Django refuses
    a query from an async context)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(read).result()


def _latest() -> tuple[bool, str]:
    execution = QueryExecution.objects.latest("created_at")
    return execution.claim_citations.exists(), execution.confidence


def test_the_dogs_question_cites_nothing(page: Page, site: str) -> None:
    """From the demo's own gold set: the handbook does not say."""
    text = _ask(page, site, "Are dogs allowed in the office?", "01-dogs")
    assert text.strip() == NOT_FOUND, text
    expect(page.locator("#no-answer")).to_be_visible()
    assert page.locator("a.ref").count() == 0
    assert _in_thread(_latest) == (False, "low")


def _first_page() -> int | None:
    """The page of the latest answer's first quote."""
    execution = QueryExecution.objects.latest("created_at")
    first = (
        ClaimCitation.objects.filter(query=execution)
        .select_related("quoted_source__chunk")
        .order_by("segment")
        .first()
    )
    assert first is not None
    return claim_page(first)


def test_the_region_57_question_quotes_page_57_first(page: Page, site: str) -> None:
    text = _ask(page, site, "How many staff does region 57 have?", "02-region-57")
    assert "Region 57 has" in text and "[1]" in text, text
    assert _in_thread(_first_page) == 57
    expect(page.locator(".preview").first).to_contain_text("page 57")
