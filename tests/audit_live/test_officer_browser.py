"""A compliance officer, in headless Chromium: sign in to the admin, search the
trail for a question, open it, follow the quoted source to the chunk and the
file, and download the original (checked byte for byte)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Browser, expect
from pytest_django.live_server_helper import LiveServer

from citations.llm_apps import app_create
from citations.models import QueryExecution
from citations.services import query_execute
from documents.demo import demo_documents_write
from documents.models import File, OrganizationMember
from tests import factories
from tests.conftest import wait_for_status
from tests.support.browser import chromium
from tests.support.worker import ARTIFACTS, WorkerProcess

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.worker]

PASSWORD = "officer-pass-9876"
QUESTION = "Within what time must security incidents be reported?"
SHOTS = ARTIFACTS / "screenshots"


@pytest.fixture
def evidence(
    live_server: LiveServer, celery_worker: WorkerProcess, tmp_path: Path
) -> tuple[str, QueryExecution, File]:
    org = factories.organization("Acme")
    source = factories.data_source(org, "Handbook")
    pdf = next(p for p in demo_documents_write(tmp_path) if p.suffix == ".pdf")
    record = factories.upload(source, pdf.name, pdf.read_bytes()).file
    assert wait_for_status(record.pk).status == "ready"
    app = app_create(organization=org, name="HR", data_source_names=["Handbook"])
    execution = query_execute(app=app, question=QUESTION)
    officer = get_user_model().objects.create_user("olivia", password=PASSWORD, is_staff=True)
    OrganizationMember.objects.create(organization=org, user=officer, role="officer")
    return live_server.url, execution, record


@pytest.fixture
def browser(evidence: tuple[str, QueryExecution, File]) -> Iterator[Browser]:
    with chromium() as browser:
        yield browser


def test_an_officer_follows_an_answer_down_to_the_original_bytes(
    evidence: tuple[str, QueryExecution, File], browser: Browser
) -> None:
    url, execution, record = evidence
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(accept_downloads=True)
    page.goto(f"{url}/admin/")
    page.fill("#id_username", "olivia")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.goto(f"{url}/admin/citations/queryexecution/")
    page.fill("#searchbar", "security incidents reported")
    page.press("#searchbar", "Enter")
    expect(page.locator("#result_list")).to_contain_text(QUESTION[:60])
    page.screenshot(path=str(SHOTS / "officer-screenshot-01-search.png"), full_page=True)

    page.locator("#result_list a", has_text=QUESTION[:40]).first.click()
    expect(page.locator(".answer")).to_contain_text("within one hour")
    expect(page.locator("#source-1")).to_contain_text("security-policy.pdf")
    expect(page.locator("#source-1")).to_contain_text("page 3")
    page.screenshot(path=str(SHOTS / "officer-screenshot-02-answer.png"), full_page=True)

    page.locator("#source-1 a", has_text="chunk").click()
    expect(page.locator("body")).to_contain_text("Incident Response")
    page.screenshot(path=str(SHOTS / "officer-screenshot-03-chunk.png"), full_page=True)
    page.go_back()

    page.locator("#source-1 a", has_text="file revision").click()
    expect(page.locator("body")).to_contain_text(record.sha256)
    page.screenshot(path=str(SHOTS / "officer-screenshot-04-file.png"), full_page=True)
    with page.expect_download() as download_info:
        page.locator("a", has_text="download original").first.click()
    path = download_info.value.path()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == record.sha256
