"""A PDF location's boxes hold its own words and no others.

The converter boxes whole PDF lines; a chunk that starts or ends inside a line
would claim the words of its neighbour there. Ingestion narrows such lines to
the range's words, so an integrator drawing the API's boxes marks exactly the
chunk. Checked on every corpus PDF with PyMuPDF's own word list.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from pathlib import Path

import pymupdf
import pytest
from django.conf import settings

from documents import ingestion
from documents.chunking import chunk_markdown
from documents.converters import ConversionError, converter_for
from documents.converters.pdf.extract import TEXT_FLAGS  # glyphs decoded as converted
from documents.converters.sandbox import FAULT_ENV, pdf_words_isolated
from documents.locating import Locator
from documents.markdown_structure import MarkdownStructure
from documents.models import DataSource, File, Location, SourceBoxes
from documents.storage import original_delete
from documents.word_boxes import DocumentWords, words_unpack
from tests import factories
from tests.documents.test_provenance_corpus import CORPUS_FILES, OVERLAP, SCAN, TARGET, _case_id
from tests.support.corpus import nonempty
from tests.support.tamper import triggers_off

PDFS = nonempty([name for name in CORPUS_FILES if name.lower().endswith(".pdf")], "corpus PDFs")
# right-to-left lines stay whole by design (documents/word_boxes.py): the page lists
# their words left to right, so a repeated word could pair with the wrong copy; their
# lam-alef ligatures are read in another order too (test_provenance_corpus allows it)
RIGHT_TO_LEFT = {"docling/pdf/right_to_left_01.pdf"}


def _key(word: str) -> str:
    return re.sub(r"[\W_]+", "", word).casefold()


def _keys(words: list[str]) -> list[str]:
    return [key for key in map(_key, words) if key]


def _box_check(data: bytes, *, narrowed: bool) -> tuple[list, list]:
    """Per location, box by box: page words inside a box that its Markdown text does
    not carry (foreign), and words of its text found in none of its boxes (left out).

    A word split by a line-end hyphen is one Markdown word and two page words, so a
    page word may also be the start or end of a Markdown word, and a Markdown word
    the concatenation of two neighbouring page words.
    """
    conversion = converter_for("pdf").convert(data)
    body_end = _body_end(conversion.markdown, conversion.metadata.get("comments", 0))
    structure = MarkdownStructure(conversion.markdown, body_start=conversion.body_start)
    narrowing = DocumentWords.read(data) if narrowed else None
    locator = Locator(
        structure, line_pages=conversion.line_pages, spans=conversion.spans, page_words=narrowing
    )
    foreign: list[tuple[int, str]] = []
    left_out: list[tuple[int, str]] = []
    with pymupdf.open(stream=data, filetype="pdf") as pdf:
        for span in chunk_markdown(structure, target=TARGET, overlap=OVERLAP):
            for location in locator.locate(span.char_start, span.char_end):
                if not location.boxes:
                    continue
                text = conversion.markdown[location.char_start : location.char_end]
                words = _keys(text.split())
                carried = set(words) | {a + b for a, b in zip(words, words[1:], strict=False)}
                body = conversion.markdown[location.char_start : min(location.char_end, body_end)]
                drawn = _keys(body.split())  # the page draws the body only
                assert location.page_number is not None
                page = pdf[location.page_number - 1].get_text("words", flags=TEXT_FLAGS)
                boxed: list[str] = []
                for box in location.boxes:
                    rect = pymupdf.Rect(box)
                    inside = [w[4] for w in page if rect.contains(_centre(w))]
                    for word in inside:
                        key = _key(word)
                        part = any(
                            m != key and (m.startswith(key) or m.endswith(key)) for m in words
                        )
                        if key and key not in carried and not part:
                            foreign.append((location.char_start, word))
                    boxed += _keys(inside)
                found = set(boxed) | {a + b for a, b in zip(boxed, boxed[1:], strict=False)}
                left_out += [(location.char_start, m) for m in drawn if m not in found]
    return foreign, left_out


def _body_end(markdown: str, comments: int) -> int:
    """Where the page text ends: annotation notes follow it under ``# Comments``. No
    page draws them, so their words are checked against the annotations themselves
    (test_provenance_corpus); here their boxes must only not claim foreign words."""
    if not comments:
        return len(markdown)
    return markdown.rindex("# Comments\n")


def _centre(word: tuple) -> pymupdf.Point:
    return pymupdf.Point((word[0] + word[2]) / 2, (word[1] + word[3]) / 2)


def _foreign_words(data: bytes, *, narrowed: bool) -> list[tuple[int, str]]:
    return _box_check(data, narrowed=narrowed)[0]


@pytest.mark.parametrize("name", PDFS, ids=_case_id)
def test_location_boxes_hold_their_own_words_and_no_others(name: str, corpus: Path) -> None:
    data = (corpus / name).read_bytes()
    if name == SCAN:  # refused, so no locations (test_provenance_corpus covers it)
        with pytest.raises(ConversionError, match="no text layer"):
            _box_check(data, narrowed=True)
        return
    foreign, left_out = _box_check(data, narrowed=True)
    if name in RIGHT_TO_LEFT:
        return
    assert left_out == [], f"{name}: words in no box of their location: {left_out[:10]}"
    assert foreign == [], f"{name}: words of other ranges inside location boxes: {foreign[:10]}"


def test_whole_line_boxes_claimed_neighbours_words(corpus: Path) -> None:
    """What the narrowing fixes: chunks of test.pdf start and end inside lines."""
    data = (corpus / "markitdown/test_files/test.pdf").read_bytes()
    assert len(_foreign_words(data, narrowed=False)) >= 10
    assert _foreign_words(data, narrowed=True) == []


def _ingest_stages(record: File) -> None:
    for stage in (ingestion.file_convert, ingestion.file_chunk, ingestion.file_embed):
        stage(file_id=str(record.pk))
    record.refresh_from_db()


@pytest.mark.django_db
def test_ingestion_stores_narrowed_boxes_and_keeps_whole_lines_without_the_words(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = (corpus / "markitdown/test_files/test.pdf").read_bytes()
    source = factories.data_source()
    narrowed = factories.upload(source, "test.pdf", data).file
    _ingest_stages(narrowed)
    assert narrowed.status == "ready", narrowed.error_message
    stored = _stored_boxes(narrowed)
    expected = _locations(data, narrowed=True)
    assert stored == expected and stored != _locations(data, narrowed=False)

    # the words are read beside the conversion: the original gone between conversion
    # and chunking still gives exact boxes, and the words are dropped once used
    record = factories.upload(source, "second.pdf", data + b"\n%second\n").file
    ingestion.file_convert(file_id=str(record.pk))
    assert SourceBoxes.objects.get(markdown__file=record).page_words is not None
    original_delete(record.storage_key)
    ingestion.file_chunk(file_id=str(record.pk))
    assert _stored_boxes(record) == expected
    assert SourceBoxes.objects.get(markdown__file=record).page_words is None

    # kept words that cannot be unpacked are read again: still exact boxes
    record = factories.upload(source, "damaged.pdf", data + b"\n%damaged\n").file
    ingestion.file_convert(file_id=str(record.pk))
    with triggers_off():
        SourceBoxes.objects.filter(markdown__file=record).update(page_words=b"not zlib")
    ingestion.file_chunk(file_id=str(record.pk))
    record.refresh_from_db()
    assert record.status == "embedding", record.error_message
    assert _stored_boxes(record) == expected

    # the sandboxed reading of the words crashes: the conversion goes on, the chunk
    # stage tries again (crashes again): whole lines, and the file carries on
    monkeypatch.setenv(FAULT_ENV, "segv:pdf-words")
    _assert_whole_lines_after(lambda _record: None, source, data + b"\n%third\n")

    # no words from the conversion and the original gone before chunking: whole lines
    _assert_whole_lines_after(
        lambda record: original_delete(record.storage_key), source, data + b"\n%fourth\n"
    )


def _stored_boxes(record: File) -> dict[tuple[int, int], list[list[float]]]:
    return {
        (loc.char_start, loc.char_end): loc.boxes
        for loc in Location.objects.filter(chunk__file=record)
    }


def _assert_whole_lines_after(
    sabotage: Callable[[File], None], source: DataSource, data: bytes
) -> None:
    """Converted, then ``sabotage``d, then chunked: the file carries on to embedding
    with whole-line boxes."""
    record = factories.upload(source, f"{uuid.uuid4().hex}.pdf", data).file
    ingestion.file_convert(file_id=str(record.pk))
    sabotage(record)
    ingestion.file_chunk(file_id=str(record.pk))
    record.refresh_from_db()
    assert record.status == "embedding", record.error_message
    assert _stored_boxes(record) == _locations(data, narrowed=False)


def test_page_words_are_read_in_the_sandbox_as_in_process(corpus: Path) -> None:
    data = (corpus / "markitdown/test_files/test.pdf").read_bytes()
    isolated = words_unpack(pdf_words_isolated(data))  # packed in the child
    in_process = DocumentWords.read(data).pages
    assert len(isolated) == len(in_process) == 1
    assert [w[:5] for w in isolated[0]] == [list(w[:5]) for w in in_process[0]]
    with pytest.raises(ConversionError, match="could not read this PDF"):
        pdf_words_isolated(b"%PDF-1.7 truncated garbage")


def _locations(data: bytes, *, narrowed: bool) -> dict[tuple[int, int], list[list[float]]]:
    conversion = converter_for("pdf").convert(data)
    structure = MarkdownStructure(conversion.markdown, body_start=conversion.body_start)
    words = DocumentWords.read(data) if narrowed else None
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
