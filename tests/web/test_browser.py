"""End to end in headless Chromium, on a live server with a real worker: sign
in, upload a corpus file through the library page, wait for ``ready``, ask a
question answered on page (slide) 2, click [1] and check the viewer shows that
page with the highlight over the cited words — for a PDF, a DOCX and a PPTX.

The highlight is checked independently of the viewer's code: for the PDF, the
highlight elements as laid out by the browser are mapped back onto the
original page and PyMuPDF reads which words lie under them; for DOCX and PPTX,
python-docx / python-pptx confirm the highlighted words are on page/slide 2.
Screenshots go to ``test-artifacts/screenshots/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import docx
import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Browser, Locator, Page, expect
from pptx import Presentation
from pytest_django.live_server_helper import LiveServer

from citations.llm_apps import app_create
from tests import factories
from tests.support.browser import chromium
from tests.support.worker import ARTIFACTS, WorkerProcess
from tests.web.conftest import PASSWORD
from tests.web.highlights import words_under
from tests.web.test_viewer import (
    DOCX,
    DOCX_QUESTION,
    PDF,
    PDF_QUESTION,
    PPTX,
    PPTX_QUESTION,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.worker]

SCREENSHOTS = ARTIFACTS / "screenshots"


@pytest.fixture
def site(live_server: LiveServer, celery_worker: WorkerProcess) -> str:
    """Acme, member alice, a Handbook data source and an HR app, as an admin sets them up."""
    org = factories.organization("Acme")
    user = get_user_model().objects.create_user("alice", "alice@example.com", PASSWORD)
    org.members.create(user=user, role="editor")
    factories.data_source(org, "Handbook")
    app_create(organization=org, name="HR", data_source_names=["Handbook"])
    return live_server.url


@pytest.fixture
def browser(site: str) -> Iterator[Browser]:
    """Chromium for one test. Playwright's sync API keeps an event loop running in
    this thread, where Django refuses database calls: it starts after the rows
    above are written and stops before pytest-django flushes the database."""
    with chromium() as browser:
        yield browser


class Shots:
    """Numbered full-page screenshots named after the test."""

    def __init__(self, name: str) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.name, self.count = name, 0

    def take(self, page: Page, step: str) -> Path:
        self.count += 1
        path = SCREENSHOTS / f"{self.name}-screenshot-{self.count:02d}-{step}.png"
        page.screenshot(path=str(path), full_page=True)
        return path


def _sign_in(page: Page, url: str) -> None:
    page.goto(f"{url}/library/")
    expect(page).to_have_url(f"{url}/accounts/login/?next=/library/")
    page.get_by_label("User name").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{url}/library/")


def _upload_and_wait(page: Page, path: Path, shots: Shots) -> None:
    page.get_by_label("Choose files").set_input_files(str(path))
    page.get_by_role("button", name="Upload").click()
    expect(page.locator(".messages")).to_contain_text(f"{path.name} uploaded as revision 1")
    shots.take(page, "uploaded")
    row = page.locator("tr[data-status]").filter(has_text=path.name)
    # the list refreshes itself (fetch) until the file is ready or failed
    page.wait_for_selector('tr[data-status="ready"], tr[data-status="failed"]', timeout=240_000)
    expect(row).to_have_attribute("data-status", "ready")
    shots.take(page, "ready")


def _ask_and_open_first_reference(page: Page, url: str, question: str, shots: Shots) -> None:
    page.get_by_role("link", name="Ask").click()
    page.get_by_label("Question").fill(question)
    page.get_by_role("button", name="Ask").click()
    page.wait_for_url(f"{url}/answers/**", timeout=120_000)
    expect(page.locator("#answer-text a.ref").first).to_have_text("[1]")
    expect(page.locator("#source-1")).to_be_visible()
    shots.take(page, "answer")
    page.locator("#answer-text a.ref", has_text="[1]").first.click()
    page.wait_for_url("**/sources/1/#*")


def _in_viewport(page: Page, selector: str) -> bool:
    return page.evaluate(
        """s => { const r = document.querySelector(s).getBoundingClientRect();
                  return r.top < window.innerHeight && r.bottom > 0; }""",
        selector,
    )


def _percent_boxes(page: Page, frame: str, boxes: str) -> list[tuple[float, float, float, float]]:
    """Highlight boxes as laid out by the browser, in percent of the page image."""
    image = page.locator(f"{frame} img").bounding_box()
    assert image and image["width"] > 0
    result = []
    for element in page.locator(f"{frame} {boxes}").all():
        box = element.bounding_box()
        assert box is not None
        result.append(
            (
                100 * (box["x"] - image["x"]) / image["width"],
                100 * (box["y"] - image["y"]) / image["height"],
                100 * box["width"] / image["width"],
                100 * box["height"] / image["height"],
            )
        )
    return result


def test_pdf_reference_opens_its_page_with_the_cited_words_highlighted(
    browser: Browser, site: str, corpus: Path
) -> None:
    shots = Shots("pdf")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    _sign_in(page, site)
    _upload_and_wait(page, corpus / PDF, shots)
    _ask_and_open_first_reference(page, site, PDF_QUESTION, shots)
    assert page.url.endswith("#page-2")
    figure = page.locator("#page-2")
    expect(figure).to_be_visible()
    assert page.locator("figure.pdf-page").count() == 1, "only the cited page is shown"
    assert _in_viewport(page, "#page-2")
    assert figure.locator("img").evaluate("i => i.complete && i.naturalWidth > 0")
    claim_boxes = _percent_boxes(page, "#page-2", ".hl-claim")
    assert claim_boxes, "no highlight over the cited words"
    under = words_under(corpus / PDF, 2, claim_boxes)
    assert {"Model", "Batmobile"} <= under, under  # the row of the estimate's form table
    assert "Gabriel" not in under, "page 1's customer is not highlighted"
    shots.take(page, "viewer")
    figure.screenshot(path=str(SCREENSHOTS / "pdf-screenshot-page-2-highlight.png"))
    page.close()


def test_pdf_pages_work_on_a_phone_by_keyboard_and_without_javascript(
    browser: Browser, site: str, corpus: Path
) -> None:
    shots = Shots("phone")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    _sign_in(page, site)
    _upload_and_wait(page, corpus / PDF, shots)
    _ask_and_open_first_reference(page, site, PDF_QUESTION, shots)
    viewer_url, cookies = page.url, page.context.cookies()
    answer_url = viewer_url.split("sources/")[0]
    page.close()
    # a phone-sized screen without JavaScript: no sideways scrolling, highlights still drawn
    phone = browser.new_context(
        viewport={"width": 390, "height": 844}, java_script_enabled=False, is_mobile=True
    )
    phone.add_cookies(cookies)  # type: ignore[arg-type]  # cookies() gives what it takes
    small = phone.new_page()
    for url, step in ((answer_url, "answer"), (viewer_url, "viewer")):
        small.goto(url)
        width = small.evaluate("document.documentElement.scrollWidth")
        assert width <= 390 + 1, f"{step} page scrolls sideways on a phone ({width}px)"
        shots.take(small, step)
    assert small.locator("#page-2 .hl-claim").count() > 0
    # keyboard: the first Tab reaches the skip link, which moves focus to the content
    small.goto(answer_url)
    small.keyboard.press("Tab")
    assert small.evaluate("document.activeElement.className") == "skip"
    small.keyboard.press("Enter")
    assert small.evaluate("document.activeElement.id") == "main"
    small.keyboard.press("Tab")
    focused = small.evaluate("document.activeElement.textContent")
    assert focused.strip() == "History", "focus continues into the content"
    phone.close()


def _office_case(browser: Browser, site: str, path: Path, question: str, name: str) -> str:
    """Upload, ask, click [1]; returns the highlighted text of the cited line (page 2)."""
    shots = Shots(name)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    _sign_in(page, site)
    _upload_and_wait(page, path, shots)
    _ask_and_open_first_reference(page, site, question, shots)
    fragment = page.url.rsplit("#", 1)[1]
    assert fragment.startswith("L")
    line = page.locator(f"#{fragment}")
    expect(line).to_have_class("line cited")
    expect(line).to_have_attribute("data-page", "2")
    assert _in_viewport(page, f"#{fragment}"), "the viewer scrolls to the cited line"
    marks = page.locator(".line.cited mark")
    assert marks.count() > 0
    highlighted = " ".join(marks.all_inner_texts())
    expect(page.locator("h1")).to_contain_text(path.name)
    shots.take(page, "viewer")
    line.screenshot(path=str(SCREENSHOTS / f"{name}-screenshot-cited-line.png"))
    page.close()
    return highlighted


def test_docx_reference_opens_page_2_with_the_cited_lines_highlighted(
    browser: Browser, site: str, corpus: Path
) -> None:
    highlighted = _office_case(browser, site, corpus / DOCX, DOCX_QUESTION, "docx")
    assert "Here is a random table for .docx parsing test purposes:" in highlighted
    # python-docx: the highlighted paragraph follows Word's first rendered page break
    page_of: dict[str, int] = {}
    page = 1
    for paragraph in docx.Document(str(corpus / DOCX)).paragraphs:
        page_of.setdefault(paragraph.text.strip(), page)
        page += len(paragraph.rendered_page_breaks)
    assert page_of["Here is a random table for .docx parsing test purposes:"] == 2


def test_pptx_reference_opens_slide_2_with_the_cited_lines_highlighted(
    browser: Browser, site: str, corpus: Path
) -> None:
    highlighted = _office_case(browser, site, corpus / PPTX, PPTX_QUESTION, "pptx")
    sentence = "AutoGen is an open-source framework that allows developers to build LLM"
    assert sentence in highlighted
    slides = Presentation(str(corpus / PPTX)).slides
    texts = [
        " ".join(s.text_frame.text for s in slide.shapes if s.has_text_frame) for slide in slides
    ]
    assert sentence in texts[1] and sentence not in texts[0]


def _row_id(row: Locator) -> str:
    """The file id of a library row (its id attribute is ``file-<id>``)."""
    value = row.get_attribute("id")
    assert value is not None, "a row without an id"
    return value.removeprefix("file-")


def test_the_library_keeps_keyboard_focus_while_it_updates_itself(
    browser: Browser, site: str, corpus: Path
) -> None:
    """The list re-reads itself every second while files ingest; it replaced the
    whole list, so a focused Download link or Retry button lost focus each time."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    _sign_in(page, site)
    shots = Shots("library-focus")
    _upload_and_wait(page, corpus / "docling/md/duck.md", shots)
    long_pdf = corpus / "py-pdf-sample-files/026-latex-multicolumn/multicolumn.pdf"
    page.get_by_label("Choose files").set_input_files(str(long_pdf))
    page.get_by_role("button", name="Upload").click()
    expect(page.locator(".messages")).to_contain_text(f"{long_pdf.name} uploaded")
    rows = page.locator("tr[data-status]")
    ready_id = _row_id(rows.filter(has_text="duck.md"))
    busy_row = rows.filter(has_text=long_pdf.name)
    busy_id = _row_id(busy_row)
    assert busy_row.get_attribute("data-status") != "ready"
    for focused in (
        f"download-{ready_id}",
        f"download-{busy_id}",
    ):  # an unchanged row, the busy one
        page.locator(f"#{focused}").focus()
        stages = {busy_row.get_attribute("data-status")}
        for _ in range(6):  # several polls, while the busy row's progress changes
            page.wait_for_timeout(700)
            stages.add(busy_row.get_attribute("data-status"))
            assert page.evaluate("document.activeElement.id") == focused, stages
    expect(page.locator("#busy-status")).to_have_attribute("aria-live", "polite")
    page.wait_for_selector(f'#file-{busy_id}[data-status="ready"]', timeout=240_000)
    expect(page.locator("#busy-status")).to_have_text("All files are processed.")
    page.close()


def test_a_quoted_passage_opens_on_its_cited_sentence(
    browser: Browser, site: str, tmp_path: Path
) -> None:
    """A passage box has a limited height; a sentence cited from the end of a long
    chunk was below the box's fold, so the reader saw only uncited text."""
    garden = "".join(f"Note {n} describes the flower beds of the garden.\n\n" for n in range(1, 16))
    document = tmp_path / "facilities.md"
    document.write_text(
        "# Facilities\n\n" + garden + "The archive password is rotated every ninety days.\n"
    )
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    _sign_in(page, site)
    _upload_and_wait(page, document, Shots("passage-scroll"))
    page.get_by_role("link", name="Ask").click()
    page.get_by_label("Question").fill("How often is the archive password rotated?")
    page.get_by_role("button", name="Ask").click()
    page.wait_for_url(f"{site}/answers/**", timeout=120_000)
    for url in (None, "sources"):  # the answer page's card, then the source viewer
        if url:
            page.locator("#answer-text a.ref", has_text="[1]").first.click()
            page.wait_for_url("**/sources/1/#*")
        box = page.locator("blockquote.passage").first
        assert "ninety days" in box.locator("mark").first.inner_text()
        placed = box.evaluate(
            """b => { const m = b.querySelector("mark").getBoundingClientRect();
                      const r = b.getBoundingClientRect();
                      return {tall: b.scrollHeight > b.clientHeight, scrolled: b.scrollTop,
                              inside: m.top >= r.top && m.bottom <= r.bottom}; }"""
        )
        assert placed["tall"] and placed["scrolled"] > 0 and placed["inside"], placed
    page.close()
