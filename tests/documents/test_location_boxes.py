"""A PDF location's boxes hold its own words and no others.

The converter boxes whole PDF lines; a chunk that starts or ends inside a line
would claim the words of its neighbour there. Ingestion narrows such lines to
the range's words, so an integrator drawing the API's boxes marks exactly the
chunk. Checked on every corpus PDF with PyMuPDF's own word list.
"""

from __future__ import annotations

import re

import pymupdf
import pytest
from django.conf import settings

from documents import ingestion
from documents.chunking import chunk_markdown
from documents.converters import ConversionError, converter_for
from documents.converters._pdf_layout import TEXT_FLAGS  # glyphs decoded as converted
from documents.locating import Locator
from documents.markdown_structure import MarkdownStructure
from documents.models import File, Location
from documents.storage import original_delete
from documents.word_boxes import DocumentWords
from tests import factories
from tests.documents.test_provenance_corpus import CORPUS_FILES, OVERLAP, TARGET, _case_id

PDFS = [name for name in CORPUS_FILES if name.lower().endswith(".pdf")]
# right-to-left lines stay whole by design (documents/word_boxes.py): the page lists
# their words left to right, so a repeated word could pair with the wrong copy
RIGHT_TO_LEFT = {"docling/pdf/right_to_left_01.pdf"}


def _key(word: str) -> str:
    return re.sub(r"[\W_]+", "", word).casefold()


def _foreign_words(data: bytes, *, narrowed: bool) -> list[tuple[int, str]]:
    """Page words inside a location's boxes that its Markdown text does not carry."""
    conversion = converter_for("pdf").convert(data)
    structure = MarkdownStructure(conversion.markdown, body_start=conversion.body_start)
    narrowing = DocumentWords(data) if narrowed else None
    locator = Locator(
        structure, line_pages=conversion.line_pages, spans=conversion.spans, page_words=narrowing
    )
    foreign: list[tuple[int, str]] = []
    with pymupdf.open(stream=data, filetype="pdf") as pdf:
        for span in chunk_markdown(structure, target=TARGET, overlap=OVERLAP):
            for location in locator.locate(span.char_start, span.char_end):
                text = conversion.markdown[location.char_start : location.char_end]
                keys = {_key(word) for word in text.split()}
                joined = "".join(_key(word) for word in text.split())  # de-hyphenated words
                page_words = (
                    pdf[location.page_number - 1].get_text("words", flags=TEXT_FLAGS)
                    if location.boxes
                    else []
                )
                for box in location.boxes:
                    for x0, y0, x1, y1, word, *_ in page_words:
                        centre = pymupdf.Point((x0 + x1) / 2, (y0 + y1) / 2)
                        key = _key(word)
                        inside = pymupdf.Rect(box).contains(centre)
                        if inside and key and key not in keys and key not in joined:
                            foreign.append((location.char_start, word))
    if narrowing is not None:
        narrowing.close()
    return foreign


@pytest.mark.parametrize("name", PDFS, ids=_case_id)
def test_location_boxes_hold_no_word_outside_their_range(name, corpus):
    data = (corpus / name).read_bytes()
    try:
        foreign = _foreign_words(data, narrowed=True)
    except ConversionError:
        return  # encrypted or scanned: no locations (test_provenance_corpus covers these)
    if name in RIGHT_TO_LEFT:
        return
    assert foreign == [], f"{name}: words of other ranges inside location boxes: {foreign[:10]}"


def test_whole_line_boxes_claimed_neighbours_words(corpus):
    """What the narrowing fixes: chunks of test.pdf start and end inside lines."""
    data = (corpus / "markitdown/test_files/test.pdf").read_bytes()
    assert len(_foreign_words(data, narrowed=False)) >= 10
    assert _foreign_words(data, narrowed=True) == []


def _ingest_stages(record: File) -> None:
    for stage in (ingestion.file_convert, ingestion.file_chunk, ingestion.file_embed):
        stage(file_id=str(record.pk))
    record.refresh_from_db()


@pytest.mark.django_db
def test_ingestion_stores_narrowed_boxes_and_keeps_whole_lines_without_the_original(corpus):
    data = (corpus / "markitdown/test_files/test.pdf").read_bytes()
    source = factories.data_source()
    narrowed = factories.upload(source, "test.pdf", data).file
    _ingest_stages(narrowed)
    assert narrowed.status == "ready", narrowed.error_message
    stored = {
        (loc.char_start, loc.char_end): loc.boxes
        for loc in Location.objects.filter(chunk__file=narrowed)
    }
    expected = _locations(data, narrowed=True)
    assert stored == expected and stored != _locations(data, narrowed=False)

    # the original gone between conversion and chunking: whole lines, not a failure
    again = factories.upload(source, "copy.pdf", data + b"\n%copy\n").file
    ingestion.file_convert(file_id=str(again.pk))
    original_delete(again.storage_key)
    ingestion.file_chunk(file_id=str(again.pk))
    again.refresh_from_db()
    assert again.status == "embedding", again.error_message
    whole = {
        (loc.char_start, loc.char_end): loc.boxes
        for loc in Location.objects.filter(chunk__file=again)
    }
    assert whole == _locations(data + b"\n%copy\n", narrowed=False)


def _locations(data: bytes, *, narrowed: bool) -> dict[tuple[int, int], list[list[float]]]:
    conversion = converter_for("pdf").convert(data)
    structure = MarkdownStructure(conversion.markdown, body_start=conversion.body_start)
    words = DocumentWords(data) if narrowed else None
    locator = Locator(
        structure, line_pages=conversion.line_pages, spans=conversion.spans, page_words=words
    )
    spans = chunk_markdown(
        structure,
        target=settings.PROVENANCE_CHUNK_TARGET_TOKENS,
        overlap=settings.PROVENANCE_CHUNK_OVERLAP_TOKENS,
    )
    return {
        (d.char_start, d.char_end): d.boxes
        for span in spans
        for d in locator.locate(span.char_start, span.char_end)
    }
