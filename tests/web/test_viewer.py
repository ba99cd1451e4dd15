"""The source viewer and page images on real corpus files ingested by the real
pipeline: PDF pages with highlight boxes over the cited words, DOCX/PPTX
Markdown with the cited lines, and tenancy of page images."""

from __future__ import annotations

from pathlib import Path

import pytest

from citations.models import QueryExecution, QuotedSource
from citations.services import query_execute
from documents.models import File
from tests import factories
from tests.web.conftest import Tenant, ingest_now, member_of, signed_in
from tests.web.highlights import words_of, words_under

pytestmark = pytest.mark.django_db

PDF = "markitdown/test_files/REPAIR-2022-INV-001_multipage.pdf"
PDF_QUESTION = "What is the model of Bruce Wayne's vehicle?"
DOCX = "markitdown/test_files/test.docx"
DOCX_QUESTION = "What is the random table for?"
PPTX = "markitdown/test_files/test.pptx"
PPTX_QUESTION = "What does AutoGen allow developers to build?"


def _ingested(tenant: Tenant, corpus: Path, name: str) -> File:
    path = corpus / name
    record = ingest_now(factories.upload(tenant.source, path.name, path.read_bytes()).file)
    assert record.status == "ready", record.error_message
    return record


def _asked(tenant: Tenant, question: str) -> tuple[QueryExecution, QuotedSource]:
    execution = query_execute(app=tenant.app, question=question, user=tenant.user, origin="web")
    return execution, execution.quoted_sources.get(quoted_as="1")


def test_a_pdf_source_shows_its_page_with_boxes_over_the_cited_words(
    tenant: Tenant, corpus: Path
) -> None:
    record = _ingested(tenant, corpus, PDF)
    execution, source = _asked(tenant, PDF_QUESTION)
    assert source.page_start == 2 and source.file_id == record.pk
    response = tenant.client.get(f"/answers/{execution.pk}/sources/1/")
    body = response.content.decode()
    assert 'id="page-2"' in body and 'id="page-1"' not in body
    assert f'src="/files/{record.pk}/pages/2.png"' in body
    view = response.context["view"]
    [page] = view.pages
    assert page.number == 2 and page.boxes and page.claim_boxes
    boxes = [(b.left, b.top, b.width, b.height) for b in page.claim_boxes]
    under = words_under(corpus / PDF, 2, boxes)
    # the estimate's form is a table: the quoted rows, cell by cell
    cited = set().union(*(words_of(c.source_sentence) for c in source.claims.all()))
    assert {"Model", "Batmobile"} <= cited
    assert len(cited - {"|"} - under) == 0, cited - under
    # the chunk's stored boxes cover its text; the same words are not on page 1's boxes
    assert {"Bruce", "Wayne"} <= words_under(
        corpus / PDF, 2, [(b.left, b.top, b.width, b.height) for b in page.boxes]
    )
    assert 'class="hl hl-claim"' in body
    # the provenance chain, spelled out
    chunk = source.chunk
    for fact in (str(chunk.pk), chunk.content_hash, record.sha256, chunk.markdown.sha256):
        assert fact in body
    assert f"characters {chunk.char_start}–{chunk.char_end}" in body


def test_a_page_image_is_a_cached_png_of_that_page_only_for_members(
    tenant: Tenant, corpus: Path
) -> None:
    record = _ingested(tenant, corpus, PDF)
    response = tenant.client.get(f"/files/{record.pk}/pages/2.png")
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert response.content.startswith(b"\x89PNG\r\n\x1a\n")
    assert "immutable" in response["Cache-Control"] and "private" in response["Cache-Control"]
    again = tenant.client.get(
        f"/files/{record.pk}/pages/2.png", headers={"If-None-Match": response["ETag"]}
    )
    assert again.status_code == 304
    assert tenant.client.get(f"/files/{record.pk}/pages/4.png").status_code == 404
    assert tenant.client.get(f"/files/{record.pk}/pages/0.png").status_code == 404
    outsider = signed_in(member_of(factories.organization("Globex"), "mallory"))
    assert outsider.get(f"/files/{record.pk}/pages/2.png").status_code == 404


def test_a_markdown_file_has_no_page_images(tenant: Tenant, remote_work: File) -> None:
    assert tenant.client.get(f"/files/{remote_work.pk}/pages/1.png").status_code == 404


@pytest.mark.parametrize(
    ("name", "question", "unit", "cited_words"),
    [
        (DOCX, DOCX_QUESTION, "page", "Here is a random table for .docx parsing test purposes:"),
        (
            PPTX,
            PPTX_QUESTION,
            "slide",
            "AutoGen is an open-source framework that allows developers to build LLM",
        ),
    ],
    ids=["docx", "pptx"],
)
def test_an_office_source_shows_its_markdown_lines_highlighted(
    tenant: Tenant, corpus: Path, name: str, question: str, unit: str, *, cited_words: str
) -> None:
    record = _ingested(tenant, corpus, name)
    execution, source = _asked(tenant, question)
    assert source.page_start == 2, "the corpus question is answered on page/slide 2"
    answer = tenant.client.get(f"/answers/{execution.pk}/").content.decode()
    assert f'href="/answers/{execution.pk}/sources/1/#L{source.line_number_start}"' in answer
    response = tenant.client.get(f"/answers/{execution.pk}/sources/1/")
    body = response.content.decode()
    line = source.line_number_start
    assert f'<div class="line cited" id="L{line}" data-page="2">' in body
    assert f"<mark>{cited_words}" in body
    assert f"{unit} 2" in body and "<img" not in body
    first = source.chunk.locations.first()
    assert first is not None
    for heading in first.hierarchy:
        assert f"<li>{heading}</li>" in body
    assert record.sha256 in body


def test_the_whole_markdown_is_shown_on_request(tenant: Tenant, corpus: Path) -> None:
    _ingested(tenant, corpus, DOCX)
    execution, _ = _asked(tenant, DOCX_QUESTION)
    window = tenant.client.get(f"/answers/{execution.pk}/sources/1/").context["view"]
    whole = tenant.client.get(f"/answers/{execution.pk}/sources/1/?lines=all").context["view"]
    assert whole.whole and len(whole.lines) == whole.total_lines
    assert len(window.lines) <= len(whole.lines)


def test_a_sentence_starting_mid_line_lights_only_its_own_words(
    tenant: Tenant, corpus: Path
) -> None:
    """A quoted sentence that starts after another on the same PDF line is boxed from
    its first word: the line's earlier words stay unlit (they were lit before)."""
    import re

    from citations.web.viewer import source_view

    paper = "markitdown/test_files/test.pdf"
    record = _ingested(tenant, corpus, paper)
    checked = 0
    for chunk in record.chunks.order_by("position"):
        text = chunk.chunk_text
        for found in re.finditer(r"(?<=[a-z]\. )([A-Z][^.]{30,}?\.)(?= [A-Z])", text):
            line_start = text.rfind("\n", 0, found.start()) + 1
            before = words_of(text[line_start : found.start()])
            if len(before) < 3:  # not far enough into the line to tell
                continue
            view = source_view(chunk=chunk, claims=[found.span()], whole=False)
            [page] = view.pages
            boxes = [(b.left, b.top, b.width, b.height) for b in page.claim_boxes]
            under = words_under(corpus / paper, 1, boxes)
            cited = words_of(found.group())
            assert len(cited & under) / len(cited) >= 0.9, (found.group(), under)
            # nothing else: a word split by hyphenation across lines is the cited word
            strays = {w for w in under - cited if w.rstrip("-") not in found.group()}
            assert not strays, (found.group(), strays)
            checked += 1
    assert checked >= 5
