"""One real file of each format through the real worker, then the REST read side.

PDF, DOCX, PPTX, JSON and HTML uploads reach ``ready``; their stored Chunk and
Location rows satisfy invariants 1 and 3 against the stored DocumentMarkdown
(and invariant 2 where the format has pages); ``GET …/files/{id}/markdown`` and
``GET …/vectordb/{database_id}/chunk/{chunk_id}`` return exactly what is stored,
so a client can prove ``markdown[char_start:char_end] == chunk_text`` from the
API responses alone; other tenants and bad ids get 404, unfinished files 409.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

import pymupdf
import pytest
from rest_framework.test import APIClient

from documents.models import Chunk, DocumentMarkdown, File, Location, Organization
from tests import factories
from tests.conftest import wait_for_status
from tests.documents.test_provenance_corpus import (
    MIN_WORD_RATE,
    PAGE_BREAK_FACTS,
    _check_docx_pages,
    _clip_words,
    _Haystack,
    _Headings,
    _inflated_union,
    _Lines,
    _pptx_slide_texts,
    assert_invariants_1_and_3,
    words_of,
)
from tests.support.worker import WorkerProcess

if TYPE_CHECKING:
    from rest_framework.response import _MonkeyPatchedResponse


HTML = b"""<!DOCTYPE html>
<html><head><title>Travel policy</title>
<script>var hidden = "SCRIPT-TEXT-MUST-NOT-BE-INDEXED";</script>
<style>p { color: red }</style></head>
<body>
<nav><a href="/">Home</a> NAVIGATION-CHROME</nav>
<h1>Travel policy</h1>
<p>Employees book economy class for every flight shorter than six hours.</p>
<h2>Expenses</h2>
<p>Receipts are required for every expense above <b>twenty euros</b>.</p>
<ul><li>Hotels: up to 150 euros per night</li><li>Meals: up to 60 euros per day</li></ul>
<h3>Per diem table</h3>
<table><tr><th>Country</th><th>Rate</th></tr><tr><td>France</td><td>55</td></tr>
<tr><td>Japan</td><td>70</td></tr></table>
<h2>Approvals</h2>
<p>Trips above 2000 euros need the approval of a director.</p>
</body></html>
"""

CASES = {
    "pdf": (
        "py-pdf-sample-files/004-pdflatex-4-pages/pdflatex-4-pages.pdf",
        "pdflatex-4-pages.pdf",
    ),
    "docx": ("python-docx/par-rendered-page-breaks.docx", "par-rendered-page-breaks.docx"),
    "pptx": ("python-pptx/sld-notes.pptx", "sld-notes.pptx"),
    "json": ("markitdown/test_files/test.json", "test.json"),
    "html": (None, "travel-policy.html"),
}

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def _client(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def _assert_error_shape(response: _MonkeyPatchedResponse, status: int) -> dict:
    assert response.status_code == status, (response.status_code, response.content[:500])
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"message", "type", "param", "code"}, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"].strip()
    if status == 404:  # the code the thread endpoints give too (it was "error")
        assert body["error"]["code"] == "not_found", body
    return body["error"]


def _ingest(corpus: Path, kind: str) -> tuple[Organization, File, bytes]:
    relative, name = CASES[kind]
    data = HTML if relative is None else (corpus / relative).read_bytes()
    org = factories.organization()
    source = factories.data_source(org)
    record = factories.upload(source, name, data).file
    assert record.kind == kind
    record = wait_for_status(record.pk, timeout=180)
    assert record.status == "ready", f"{name}: {record.status} {record.error_message!r}"
    return org, record, data


def _stored(record: File) -> tuple[DocumentMarkdown, list[Chunk], dict[UUID, list[Location]]]:
    markdown = record.markdowns.get(is_active=True)
    chunks = list(Chunk.objects.filter(markdown=markdown).order_by("position"))
    locations = {c.pk: list(Location.objects.filter(chunk=c).order_by("ordinal")) for c in chunks}
    return markdown, chunks, locations


def _assert_stored_rows(kind: str, record: File, data: bytes) -> None:
    markdown, chunks, locations = _stored(record)
    md = markdown.markdown
    assert markdown.sha256 == hashlib.sha256(md.encode()).hexdigest()
    assert chunks, "no chunks stored"
    assert [c.position for c in chunks] == list(range(len(chunks)))
    lines, headings = _Lines(md), _Headings(md, markdown.body_start)
    pdf = pymupdf.open(stream=data, filetype="pdf") if kind == "pdf" else None
    slides = [_Haystack(t) for t in _pptx_slide_texts(data)] if kind == "pptx" else None
    docx_seen: dict[str, int] = {}
    words = verified = 0
    for chunk in chunks:
        locs = locations[chunk.pk]
        text = assert_invariants_1_and_3(
            md, markdown.body_start, chunk, locs, lines, headings=headings
        )
        assert chunk.chunk_text == text
        assert [loc.ordinal for loc in locs] == list(range(len(locs)))
        assert chunk.content_hash == hashlib.sha256(text.encode()).hexdigest()
        assert chunk.hierarchy == locs[0].hierarchy
        assert chunk.section == " > ".join(locs[0].hierarchy)
        assert (chunk.line_number_start, chunk.line_number_end) == (
            locs[0].line_number_start,
            locs[-1].line_number_end,
        )
        pages = [loc.page_number for loc in locs if loc.page_number is not None]
        assert (chunk.page_start, chunk.page_end) == (
            (min(pages), max(pages)) if pages else (None, None)
        )
        assert chunk.file_id == record.pk and chunk.organization_id == record.organization_id
        for loc in locs:
            loc_words = words_of(md[loc.char_start : loc.char_end])
            if kind in {"json", "html"}:
                assert loc.page_number is None and loc.boxes == []
                continue
            assert loc.page_number is not None and markdown.page_count is not None
            assert 1 <= loc.page_number <= markdown.page_count
            if kind == "docx":
                _check_docx_pages(md, [loc], docx_seen)
                continue
            if kind == "pdf":
                if not loc_words:
                    continue
                assert loc.boxes, f"PDF location {loc.char_start}-{loc.char_end} without boxes"
                assert pdf is not None
                page = pdf[loc.page_number - 1]
                haystack = _Haystack(_clip_words(page, _inflated_union(loc.boxes)))
            else:
                assert slides is not None
                haystack = slides[loc.page_number - 1]
            found = [w for w in loc_words if w in haystack]
            assert len(found) >= MIN_WORD_RATE * len(loc_words), (
                f"location {loc.char_start}-{loc.char_end} p.{loc.page_number}: "
                f"missing {[w for w in loc_words if w not in haystack][:20]}"
            )
            words += len(loc_words)
            verified += len(found)
    if pdf is not None:
        pdf.close()
        assert markdown.page_count == 4
        assert {loc.page_number for locs in locations.values() for loc in locs} == {1, 2, 3, 4}
    if kind == "docx":
        assert docx_seen.keys() == PAGE_BREAK_FACTS.keys()
    if kind == "pptx":
        assert markdown.page_count == 2
        notes = [
            loc
            for locs in locations.values()
            for loc in locs
            if "### Notes" in md[loc.char_start : loc.char_end]
        ]
        assert notes and all(loc.page_number == 1 for loc in notes), "notes are on slide 1"
        slide2 = [
            loc
            for locs in locations.values()
            for loc in locs
            if "# Slide 2" in md[loc.char_start : loc.char_end]
        ]
        assert slide2 and all(loc.page_number == 2 for loc in slide2)
    if kind == "json":
        for marker in (
            "5b64c88c-b3c3-4510-bcb8-da0b200602d8",
            "9700dc99-6685-40b4-9a3a-5e406dcb37f3",
        ):
            assert any(marker in c.chunk_text for c in chunks), f"{marker} not in any chunk"
    if kind == "html":
        assert "SCRIPT-TEXT" not in md and "NAVIGATION-CHROME" not in md
        assert "# Travel policy" in md and "## Expenses" in md
        assert "### Per diem table" in md and "| France | 55 |" in md
        assert chunks[0].hierarchy == ["Travel policy"]
    if kind in {"pdf", "pptx"}:
        assert words and verified >= MIN_WORD_RATE * words
        print(f"{kind}: {verified}/{words} words of stored locations found in the source")


def _assert_api_matches_storage(org: Organization, record: File) -> None:
    client = _client(factories.api_key(org))
    markdown, chunks, locations = _stored(record)
    response = client.get(f"/v1/flow/files/{record.pk}/markdown")
    assert response.status_code == 200, response.content[:500]
    body = response.json()
    database_id = str(record.data_source.vector_database_id)
    assert body["file_id"] == str(record.pk)
    assert body["database_id"] == database_id
    assert (body["converter"], body["converter_version"]) == (
        markdown.converter,
        markdown.converter_version,
    )
    assert body["markdown"] == markdown.markdown
    assert body["chunk_ids"] == [str(c.pk) for c in chunks], "chunk ids not in position order"

    api_markdown = body["markdown"]
    lines = _Lines(api_markdown)
    for chunk, chunk_id in zip(chunks, body["chunk_ids"], strict=True):
        response = client.get(f"/v1/flow/vectordb/{body['database_id']}/chunk/{chunk_id}")
        assert response.status_code == 200, response.content[:500]
        got = response.json()
        assert got["chunk_id"] == chunk_id and got["file_id"] == body["file_id"]
        assert got["chunk_text"] == chunk.chunk_text
        expected = [
            {
                "line_number_start": loc.line_number_start,
                "line_number_end": loc.line_number_end,
                "char_start": loc.char_start,
                "char_end": loc.char_end,
                "hierarchy": loc.hierarchy,
                "page_number": loc.page_number,
                "boxes": loc.boxes,
            }
            for loc in locations[chunk.pk]
        ]
        assert [{k: loc[k] for k in expected[0]} for loc in got["locations"]] == expected
        # provable from the two responses alone
        api_locs = got["locations"]
        start, end = api_locs[0]["char_start"], api_locs[-1]["char_end"]
        assert api_markdown[start:end] == got["chunk_text"]
        assert (
            "".join(api_markdown[x["char_start"] : x["char_end"]] for x in api_locs)
            == (got["chunk_text"])
        )
        for x in api_locs:
            assert (x["line_number_start"], x["line_number_end"]) == (
                lines.of(x["char_start"]),
                lines.of(x["char_end"] - 1),
            )


@pytest.mark.parametrize("kind", list(CASES))
def test_each_format_ingests_with_provenance_and_the_api_returns_what_is_stored(
    kind: str,
    celery_worker: WorkerProcess,
    corpus: Path,
) -> None:
    org, record, data = _ingest(corpus, kind)
    _assert_stored_rows(kind, record, data)
    _assert_api_matches_storage(org, record)


def test_chunk_and_markdown_endpoints_refuse_other_tenants_and_bad_ids(
    celery_worker: WorkerProcess, corpus: Path
) -> None:
    org, record, _data = _ingest(corpus, "json")
    chunk = Chunk.objects.filter(file=record).order_by("position").first()
    assert chunk is not None
    database_id = record.data_source.vector_database_id
    own = _client(factories.api_key(org))
    assert own.get(f"/v1/flow/vectordb/{database_id}/chunk/{chunk.pk}").status_code == 200

    other_org = factories.organization("Globex")
    factories.data_source(other_org)
    other = _client(factories.api_key(other_org))
    error = _assert_error_shape(other.get(f"/v1/flow/vectordb/{database_id}/chunk/{chunk.pk}"), 404)
    assert chunk.chunk_text[:40] not in json.dumps(error)
    _assert_error_shape(other.get(f"/v1/flow/files/{record.pk}/markdown"), 404)
    other_db = factories.data_source(other_org).vector_database_id
    _assert_error_shape(other.get(f"/v1/flow/vectordb/{other_db}/chunk/{chunk.pk}"), 404)

    _assert_error_shape(own.get(f"/v1/flow/vectordb/{database_id}/chunk/{uuid.uuid4()}"), 404)
    _assert_error_shape(own.get(f"/v1/flow/vectordb/{database_id}/chunk/not-a-chunk-id"), 404)
    _assert_error_shape(own.get(f"/v1/flow/vectordb/not-a-database/chunk/{chunk.pk}"), 404)
    _assert_error_shape(own.get(f"/v1/flow/vectordb/{uuid.uuid4()}/chunk/{chunk.pk}"), 404)
    _assert_error_shape(own.get(f"/v1/flow/files/{uuid.uuid4()}/markdown"), 404)
    _assert_error_shape(own.get("/v1/flow/files/not-a-file-id/markdown"), 404)


def test_markdown_of_a_failed_file_is_a_409_conflict(
    celery_worker: WorkerProcess, corpus: Path
) -> None:
    org = factories.organization()
    source = factories.data_source(org)
    data = (corpus / "hostile/py-pdf/libreoffice-writer-password.pdf").read_bytes()
    record = wait_for_status(factories.upload(source, "locked.pdf", data).file.pk)
    assert record.status == "failed"
    error = _assert_error_shape(
        _client(factories.api_key(org)).get(f"/v1/flow/files/{record.pk}/markdown"), 409
    )
    assert error["type"] == "conflict_error" and error["code"] == "ingestion_failed"
    assert (
        error["message"]
        == f"the file has no Markdown: its ingestion failed ({record.error_message})"
    )
    assert "encrypted" in error["message"]


@pytest.mark.django_db(transaction=False)
def test_markdown_of_a_file_not_yet_ingested_is_a_409_conflict() -> None:
    """Without a commit the pipeline is never queued: the file stays ``pending``."""
    org = factories.organization()
    source = factories.data_source(org)
    record = factories.upload(source, "pending.md", b"# Pending\n\nNot converted yet.\n").file
    assert File.objects.get(pk=record.pk).status == "pending"
    error = _assert_error_shape(
        _client(factories.api_key(org)).get(f"/v1/flow/files/{record.pk}/markdown"), 409
    )
    assert error["type"] == "conflict_error" and error["code"] == "not_ready"
    assert "pending" in error["message"]
