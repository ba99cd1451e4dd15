"""The library in headless Chromium (issue 33): a document's page (revisions,
chunks, the answers citing it), two corpus files dropped on the drop zone, each
uploading with its own progress bar up to 100 % and then listed and ingested by
the worker, and a viewer who reads the library but sees no upload form.
Screenshots go to ``test-artifacts/screenshots/library-*``."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Browser, Page, expect
from pytest_django.live_server_helper import LiveServer

from citations.llm_apps import app_create
from citations.services import query_execute
from tests import factories
from tests.support.browser import chromium
from tests.support.worker import ARTIFACTS, WorkerProcess
from tests.web.conftest import PASSWORD, REMOTE_WORK, ingest_now
from tests.web.test_accessibility import _axe

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

SCREENSHOTS = ARTIFACTS / "screenshots"
DROPPED = ("docling/md/duck.md", "docling/md/inline_and_formatting.md")
QUESTION = "How many days per week may employees work remotely?"


@dataclass
class Site:
    url: str
    document_id: str


@pytest.fixture
def site(live_server: LiveServer) -> Site:
    """Acme with editor alice and viewer victor; remote.md in two revisions, ingested
    in-process, and an answer of alice's that cites it."""
    org = factories.organization("Acme")
    users = get_user_model().objects
    alice = users.create_user("alice", "alice@example.com", PASSWORD)
    org.members.create(user=alice, role="editor")
    victor = users.create_user("victor", "victor@example.com", PASSWORD)
    org.members.create(user=victor, role="viewer")
    source = factories.data_source(org, "Handbook")
    app = app_create(organization=org, name="HR", data_source_names=["Handbook"])
    ingest_now(factories.upload(source, "remote.md", REMOTE_WORK).file)
    edited = REMOTE_WORK.replace(b"two days per week", b"three days per week")
    record = ingest_now(factories.upload(source, "remote.md", edited).file)
    assert record.status == "ready", record.error_message
    query_execute(app=app, question=QUESTION, user=alice, origin="web")
    return Site(url=live_server.url, document_id=str(record.document_id))


@pytest.fixture
def browser(site: Site) -> Iterator[Browser]:
    with chromium() as browser:
        yield browser


class Shots:
    def __init__(self, name: str) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.name, self.count = f"library-{name}", 0

    def take(self, page: Page, step: str) -> None:
        self.count += 1
        path = SCREENSHOTS / f"{self.name}-{self.count:02d}-{step}.png"
        page.screenshot(path=str(path), full_page=True)


def _signed_in(browser: Browser, site: Site, username: str) -> Page:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{site.url}/accounts/login/")
    page.get_by_label("User name").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{site.url}/")
    return page


def test_the_document_page_shows_revisions_chunks_and_answers(browser: Browser, site: Site) -> None:
    shots = Shots("document")
    page = _signed_in(browser, site, "alice")
    page.goto(f"{site.url}/library/")
    page.get_by_role("link", name="remote.md").first.click()
    expect(page).to_have_url(f"{site.url}/library/documents/{site.document_id}/")
    expect(page.locator("h1")).to_have_text("remote.md")
    expect(page.locator("#revisions tbody tr")).to_have_count(2)
    expect(page.locator("#revision-2")).to_contain_text("current")
    expect(page.locator("#revision-1")).to_contain_text("superseded")
    expect(page.locator("#chunks > li").first).to_contain_text("Remote work charter")
    expect(page.locator("#chunks")).to_contain_text("three days per week")
    expect(page.locator("#citing-answers")).to_contain_text(QUESTION)
    shots.take(page, "document")
    assert _axe(page) == [], "axe-core finds WCAG 2.1 AA violations on the document page"
    page.get_by_role("link", name="Delete this document…").click()
    page.get_by_label("Reason for deleting").fill("Superseded by the 2027 charter")
    shots.take(page, "confirm-delete")
    assert _axe(page) == [], "axe-core finds WCAG 2.1 AA violations on the confirmation"
    page.get_by_role("button", name="Delete the document").click()
    expect(page.locator("#deleted-notice")).to_contain_text("Superseded by the 2027 charter")
    shots.take(page, "deleted")
    page.close()


def _drop(page: Page, paths: list[Path]) -> None:
    """Drop files on the drop zone as a person dragging them from a file manager does."""
    files = [{"name": p.name, "data": base64.b64encode(p.read_bytes()).decode()} for p in paths]
    page.evaluate(
        """files => {
          const transfer = new DataTransfer();
          for (const f of files) {
            const bytes = Uint8Array.from(atob(f.data), c => c.charCodeAt(0));
            transfer.items.add(new File([bytes], f.name, {type: "text/markdown"}));
          }
          const zone = document.getElementById("drop-zone");
          const options = {dataTransfer: transfer, bubbles: true, cancelable: true};
          for (const type of ["dragenter", "dragover", "drop"]) {
            zone.dispatchEvent(new DragEvent(type, options));
          }
        }""",
        files,
    )


@pytest.mark.worker
def test_dropped_files_upload_each_with_its_progress(
    browser: Browser, site: Site, corpus: Path, celery_worker: WorkerProcess
) -> None:
    shots = Shots("drop")
    page = _signed_in(browser, site, "alice")
    page.goto(f"{site.url}/library/")
    expect(page.locator("#drop-hint")).to_be_visible()
    shots.take(page, "drop-zone")
    paths = [corpus / name for name in DROPPED]
    _drop(page, paths)
    uploads = page.locator("#upload-results li")
    expect(uploads).to_have_count(2)
    for index, path in enumerate(paths):
        item = uploads.nth(index)
        expect(item).to_have_attribute("data-result", "uploaded", timeout=30_000)
        expect(item).to_contain_text(f"{path.name} uploaded as revision 1")
        expect(item.locator(".percent")).to_have_text("100 %")
        assert item.locator("progress").evaluate("bar => bar.value") == 100
    shots.take(page, "uploaded")
    assert _axe(page) == [], "axe-core finds WCAG 2.1 AA violations with the uploads listed"
    for path in paths:  # listed by the list's own refresh, then ingested by the worker
        row = page.locator("tr[data-status]").filter(has_text=path.name)
        expect(row).to_have_count(1)
        expect(row).to_have_attribute("data-status", "ready", timeout=240_000)
    shots.take(page, "ready")
    page.close()


def test_a_viewer_reads_the_library_without_the_upload_form(browser: Browser, site: Site) -> None:
    shots = Shots("viewer")
    page = _signed_in(browser, site, "victor")
    page.goto(f"{site.url}/library/")
    expect(page.locator("tr[data-status]").filter(has_text="remote.md")).to_have_count(2)
    expect(page.locator("#upload-form")).to_have_count(0)
    expect(page.locator("#drop-zone")).to_have_count(0)
    expect(page.get_by_role("button", name="Upload")).to_have_count(0)
    expect(page.get_by_role("link", name="Delete…")).to_have_count(0)
    shots.take(page, "library")
    assert _axe(page) == [], "axe-core finds WCAG 2.1 AA violations on the viewer's library"
    page.goto(f"{site.url}/library/documents/{site.document_id}/")
    expect(page.locator("#delete-document")).to_have_count(0)
    expect(page.get_by_role("heading", name="Your answers that cite it")).to_be_visible()
    shots.take(page, "document")
    page.close()
