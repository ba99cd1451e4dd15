"""An officer in headless Chromium opens a cited passage from the admin (issue 33):
from the answer's evidence page to the reader's source viewer, where the PDF page
shows the quoted lines outlined and the passage marks the quoted sentence.

The PDF is ingested in-process before the browser starts (no worker needed);
screenshots go to ``test-artifacts/screenshots/officer-viewer-*``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect
from pytest_django.live_server_helper import LiveServer

from citations.llm_apps import app_create
from citations.models import ClaimCitation, QueryExecution
from citations.services import query_execute
from documents.demo import demo_documents_write
from tests import factories
from tests.citations.test_officer_pages import officer_of
from tests.support.browser import chromium
from tests.support.worker import ARTIFACTS
from tests.web.conftest import PASSWORD, ingest_now

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

QUESTION = "Within what time must security incidents be reported?"
SHOTS = ARTIFACTS / "screenshots"
PAGE_IMAGE_LOADED = """() => {
  const image = document.querySelector(".pdf-page img");
  return image !== null && image.complete && image.naturalWidth > 0;
}"""


@dataclass
class Cited:
    url: str
    execution: QueryExecution
    quoted: str  # the sentence [1] quotes, read before the browser starts


@pytest.fixture
def cited(live_server: LiveServer, tmp_path: Path) -> Cited:
    org = factories.organization("Officers Acme")  # apart from the package's library
    source = factories.data_source(org, "Handbook")
    pdf = next(p for p in demo_documents_write(tmp_path) if p.suffix == ".pdf")
    assert ingest_now(factories.upload(source, pdf.name, pdf.read_bytes()).file).status == "ready"
    app = app_create(organization=org, name="HR", data_source_names=["Handbook"])
    officer_of(org)
    execution = query_execute(app=app, question=QUESTION)
    claim = ClaimCitation.objects.filter(query=execution, quoted_source__quoted_as="1")[0]
    return Cited(url=live_server.url, execution=execution, quoted=claim.source_sentence)


@pytest.fixture
def browser(cited: Cited) -> Iterator[Browser]:
    with chromium() as browser:
        yield browser


def test_an_officer_opens_a_cited_passage_from_the_admin(cited: Cited, browser: Browser) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page()
    page.goto(f"{cited.url}/admin/")
    page.fill("#id_username", "olivia")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.goto(f"{cited.url}/admin/citations/queryexecution/{cited.execution.pk}/change/")
    expect(page.locator("#source-1")).to_contain_text("security-policy.pdf")
    expect(page.locator("#source-1 .rendered mark").first).to_be_visible()

    page.locator("#source-1 a", has_text="in the source viewer").click()
    expect(page.locator("h1")).to_contain_text("[1] security-policy.pdf")
    expect(page.locator("#passage mark").first).to_contain_text(cited.quoted.split()[0])
    outlined = page.locator(".pdf-page .hl-claim").first
    expect(outlined).to_be_visible()
    page.wait_for_function(PAGE_IMAGE_LOADED)  # the page image, served to the officer
    page.screenshot(path=str(SHOTS / "officer-viewer-01-passage.png"), full_page=True)

    page.locator("#viewer-bar a", has_text="Back to the evidence").click()
    expect(page.locator("#hits-h")).to_be_visible()
    page.locator(".hits a", has_text="open #2").click()
    expect(page.locator("h1")).to_contain_text("Retrieved #2")
    page.screenshot(path=str(SHOTS / "officer-viewer-02-hit.png"), full_page=True)
