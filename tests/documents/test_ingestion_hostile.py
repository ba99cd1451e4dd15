"""Hostile files through the real upload path and the real worker.

Every hostile test file of ``../shared/corpus/hostile`` (MANIFEST.tsv says what
each should produce) is either refused at upload with a readable
``UploadRejected``, or ends ``failed`` with a readable reason (never a Python
traceback), or — only where the MANIFEST says it is recoverable — ``ready``
with chunks that keep their provenance. Generated bombs (a DOCX zip bomb, a
DOCX with a forged huge declared size, a billion-laughs DOCX) fail the same
way, a conversion past the time limit fails with that reason while the
original bytes stay stored, and after all of it the worker still ingests a
normal file.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
import struct
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from django.test import override_settings

from documents import ingestion
from documents.models import Chunk, DataSource, File, Location
from documents.storage import original_open
from documents.uploads import UploadRejected
from tests import factories
from tests.conftest import wait_for_status
from tests.documents.test_provenance_corpus import (
    _Headings,
    _Lines,
    assert_invariants_1_and_3,
)
from tests.support.corpus import CORPUS
from tests.support.worker import WorkerProcess

HOSTILE = CORPUS / "hostile"
EXTENSIONS = {".pdf", ".docx", ".pptx", ".xlsx", ".md", ".json", ".bin"}
RLINK_TARGET = Path("/tmp/test_rlink.txt")  # the path rlink.docx points at
RLINK_SECRET = "de658225-569e-4e3d-9ed2-cfb6abf927fc"
RLINK_BASE64 = "ZGU2NTgyMjUtNTY5ZS00ZTNkLTllZDItY2ZiNmFiZjk"


@dataclass(frozen=True)
class Expect:
    """Allowed outcomes ("rejected", "failed", "ready") and what each must show."""

    outcomes: frozenset[str]
    message: str = ""  # regex a rejection/failure message must match (case-insensitive)
    present: tuple[str, ...] = ()  # text that must be in the chunks when ready
    absent: tuple[str, ...] = ()  # text that must never be in the Markdown
    pages: tuple[tuple[str, int], ...] = ()  # (text, page) facts when ready
    hierarchy: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (text, headings in force)


def _e(*outcomes: str, **kw: Any) -> Expect:
    return Expect(frozenset(outcomes), **kw)


# From MANIFEST.tsv, one entry per hostile test file.
EXPECTATIONS: dict[str, Expect] = {
    # HIDDEN TEXT: render-mode-3 text is not indexed (a prompt-injection vector)
    "docling/invisible_text_layer.pdf": _e(
        "ready",
        present=("Visible heading line",),
        absent=("Invisible OCR text layer",),
        pages=(("Visible heading line", 1),),
    ),
    # MALFORMED PPTX: the text of every slide still extracted
    "docling/powerpoint_malformed_pictures.pptx": _e(
        "ready",
        present=(
            "Slide With Missing BlipFill",
            "Slide With Dangling Rel",
            "Slide With Wrong Content Type",
        ),
        pages=(
            ("Slide With Missing BlipFill", 1),
            ("Slide With Dangling Rel", 2),
            ("Slide With Wrong Content Type", 3),
        ),
    ),
    # FILE-INCLUSION: the external target must never be read
    "markitdown/rlink.docx": _e(
        "ready",
        "failed",
        message=r"external|refus|could not read",
        absent=(RLINK_BASE64, RLINK_SECRET),
    ),
    # UNKNOWN FORMAT: sniffing rejects
    "markitdown/random.bin": _e("rejected", message=r"not|supported"),
    # ENCRYPTED PDF: 'encrypted/password required', not an empty index
    "py-pdf/libreoffice-writer-password.pdf": _e("failed", message=r"encrypted.*password"),
    # XXE: DTD refused, no network
    "poi/ExternalEntityInText.docx": _e("rejected", "failed", message=r"DTD|entit"),
    # TRUNCATED ZIP: clean 'corrupt file' error
    "poi/truncated62886.docx": _e("rejected", "failed", message=r"corrupt|damaged|ZIP"),
    # FUZZER REPRODUCER: clean rejection or partial text
    "poi/clusterfuzz-POIFuzzer-5205835528404992.pptx": _e(
        "rejected", "failed", "ready", message=r"corrupt|damaged|ZIP|could not read"
    ),
    # XLSX billion laughs: not one of our formats
    "poi/poc-xmlbomb.xlsx": _e("rejected", message=r"XLSX|spreadsheet|not supported"),
    # RECOVERABLE: garbage before %PDF + broken xref; 'Hello World' on page 1
    "pymupdf/test2238.pdf": _e("ready", present=("Hello World",), pages=(("Hello World", 1),)),
    # LOOP in the outline: must terminate; page texts Page1, Page2
    "pymupdf/circular-toc.pdf": _e(
        "ready", present=("Page1", "Page2"), pages=(("Page1", 1), ("Page2", 2))
    ),
    # BAD METADATA ENCODING: must not crash (its single page has no text at all)
    "pymupdf/test_4564.pdf": _e("ready", "failed", message=r"no text"),
    # MARKDOWN WITH INVALID UTF-8: decode with replacement, keep headings and lines
    "pymupdf/test_markdown_bad_unicode.md": _e(
        "ready",
        present=("Boiling Points", "Noble gases", "Comment 1"),
        hierarchy=(("Noble gases", ("Title", "A Table")), ("Comment 2", ("Title", "A List"))),
    ),
    # NEGATIVE: not a PDF at all
    "qpdf/bad1.pdf": _e("rejected", "failed", message=r"PDF"),
    # bad primary xref offset: recover or fail clearly, never hang
    "qpdf/bad3.pdf": _e("ready", "failed", message=r"PDF", present=("Potato",)),
    # damaged trailer: qpdf's own recovery mode recovers it (bad16-recover.out)
    "qpdf/bad16.pdf": _e("ready", "failed", message=r"PDF", present=("Potato",)),
    # xref /Prev loop: must terminate
    "qpdf/append-xref-loop.pdf": _e("ready", "failed", message=r"PDF|damaged"),
    # /Length int64 max: clean rejection
    "qpdf/fuzz-15442.fuzz.pdf": _e("rejected", "failed", message=r"PDF"),
    # MALFORMED JSON: a parse error, not a crash
    "qpdf/truncated.json": _e("rejected", "failed", message=r"invalid JSON.*line 1"),
}


def _manifest_hostile_files() -> list[str]:
    """Hostile test files named by MANIFEST.tsv (licences, notices, ground truths and
    expected diagnostics are not test inputs)."""
    with (CORPUS / "MANIFEST.tsv").open(newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    names = []
    for row in rows:
        path, expected = row["local_path"], row["expected_output"]
        if not path.startswith("hostile/") or Path(path).suffix.lower() not in EXTENSIONS:
            continue
        if re.match(r"(GROUNDTRUTH|EXPECTED|licen[cs]e text|notice text)", expected, re.I):
            continue
        names.append(path.removeprefix("hostile/"))
    return sorted(names)


HOSTILE_FILES = sorted(EXPECTATIONS)

pytestmark = pytest.mark.worker


# --- generated bombs ------------------------------------------------------------------

_CONTENT_TYPES = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    b'<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    b'<Default Extension="rels" '
    b'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    b'<Default Extension="xml" ContentType="application/xml"/>'
    b'<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-'
    b'officedocument.wordprocessingml.document.main+xml"/></Types>'
)
_RELS = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    b'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    b'<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
    b'relationships/officeDocument" Target="word/document.xml"/></Relationships>'
)
_W = b'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def _docx(document: bytes | None = None, *, stream_spaces: int = 0) -> bytes:
    """A minimal DOCX; ``stream_spaces`` pads one text run with that many spaces,
    compressed as it is written (never held uncompressed in memory)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("[Content_Types].xml", _CONTENT_TYPES)
        archive.writestr("_rels/.rels", _RELS)
        if stream_spaces:
            with archive.open("word/document.xml", "w", force_zip64=True) as part:
                part.write(
                    b'<?xml version="1.0" encoding="UTF-8"?><w:document '
                    + _W
                    + b'><w:body><w:p><w:r><w:t xml:space="preserve">Bomb '
                )
                block = b" " * (1 << 20)
                for _ in range(stream_spaces >> 20):
                    part.write(block)
                part.write(b"</w:t></w:r></w:p></w:body></w:document>")
        else:
            assert document is not None
            archive.writestr("word/document.xml", document)
    return buffer.getvalue()


def docx_zip_bomb() -> bytes:
    """200 MiB of XML deflated to a few hundred KiB (ratio ~1000x)."""
    return _docx(stream_spaces=200 << 20)


def docx_forged_size() -> bytes:
    """A small valid DOCX whose central directory declares 4 GB for word/document.xml."""
    body = (
        b'<?xml version="1.0" encoding="UTF-8"?><w:document '
        + _W
        + b"><w:body><w:p><w:r><w:t>Tiny text.</w:t></w:r></w:p></w:body></w:document>"
    )
    data = bytearray(_docx(body))
    name = b"word/document.xml"
    central = data.find(b"PK\x01\x02")
    while central != -1:
        name_len = struct.unpack_from("<H", data, central + 28)[0]
        if data[central + 46 : central + 46 + name_len] == name:
            struct.pack_into("<I", data, central + 24, 0xFFFF0000)  # uncompressed size
            break
        central = data.find(b"PK\x01\x02", central + 4)
    else:  # pragma: no cover
        raise AssertionError("central directory entry not found")
    return bytes(data)


def docx_billion_laughs() -> bytes:
    entities = "".join(
        f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10}">' for i in range(1, 10)
    )
    document = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<!DOCTYPE lolz [<!ENTITY lol0 "lol">{entities}]>'
        '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        "<w:body><w:p><w:r><w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>"
    ).encode()
    return _docx(document)


GENERATED = {
    "zip-bomb.docx": (docx_zip_bomb, r"zip bomb"),
    "forged-size.docx": (docx_forged_size, r"zip bomb"),
    "billion-laughs.docx": (docx_billion_laughs, r"DTD|entit"),
}


# --- helpers ----------------------------------------------------------------------------


def assert_readable(message: str) -> None:
    assert isinstance(message, str) and message.strip(), "empty reason"
    assert "Traceback" not in message and not re.search(r'File ".*", line \d+', message), message
    assert len(message) <= 2000 and "\x00" not in message, message


def _outcome(source: DataSource, name: str, data: bytes) -> tuple[str, UploadRejected | File]:
    """("rejected", message) or (status, File) once the worker is done with it."""
    try:
        record = factories.upload(source, name, data).file
    except UploadRejected as exc:
        return "rejected", exc
    return "pending", record


def _settle(pending: tuple, timeout: float = 180) -> tuple:
    state, value = pending
    if state == "rejected":
        return pending
    record = wait_for_status(value.pk, timeout=timeout)
    return record.status, record


def _assert_ready_provenance(record: File, expect: Expect) -> None:
    markdown = record.markdowns.get(is_active=True)
    md = markdown.markdown
    chunks = list(Chunk.objects.filter(markdown=markdown).order_by("position"))
    assert chunks, "ready without chunks"
    lines, headings = _Lines(md), _Headings(md, markdown.body_start)
    all_locations = []
    for chunk in chunks:
        locs = list(Location.objects.filter(chunk=chunk).order_by("ordinal"))
        assert chunk.chunk_text == assert_invariants_1_and_3(
            md, markdown.body_start, chunk, locs, lines, headings=headings
        )
        all_locations.extend(locs)
    text = "\n".join(c.chunk_text for c in chunks)
    for wanted in expect.present:
        assert wanted in text, f"{wanted!r} missing from the chunks of {record.name}"
    for wanted, page in expect.pages:
        hits = [loc for loc in all_locations if wanted in md[loc.char_start : loc.char_end]]
        assert hits and all(loc.page_number == page for loc in hits), (
            f"{wanted!r} should be located on page {page}: "
            f"{[(loc.page_number, loc.char_start) for loc in hits]}"
        )
    for wanted, chain in expect.hierarchy:
        offset = md.index(wanted)
        assert headings.at(offset) == list(chain), (wanted, headings.at(offset))


def _check(name: str, expect: Expect, state: str, value: UploadRejected | File) -> None:
    assert state in expect.outcomes, (
        f"{name}: expected {sorted(expect.outcomes)}, got {state}: "
        f"{value.message if isinstance(value, UploadRejected) else value.error_message!r}"
    )
    if state == "rejected":
        assert isinstance(value, UploadRejected), value
        assert_readable(value.message)
        assert value.code and 400 <= value.status < 500
        assert re.search(expect.message, value.message, re.I), value.message
        return
    assert isinstance(value, File), value
    for secret in expect.absent:
        assert not any(secret in m.markdown for m in value.markdowns.all()), secret
        assert not Chunk.objects.filter(file=value, chunk_text__contains=secret).exists()
    if state == "failed":
        assert_readable(value.error_message)
        assert re.search(expect.message, value.error_message, re.I), value.error_message
        assert not Chunk.objects.filter(file=value).exists(), "a failed file has chunks"
        return
    _assert_ready_provenance(value, expect)


# --- tests ------------------------------------------------------------------------------


def test_every_hostile_file_of_the_manifest_has_an_expectation() -> None:
    on_disk = sorted(
        p.relative_to(HOSTILE).as_posix()
        for p in HOSTILE.rglob("*")
        if p.is_file() and p.suffix.lower() in EXTENSIONS
    )
    assert _manifest_hostile_files() == HOSTILE_FILES
    # what is on disk and not an expectation is a ground truth or a notice, not an input
    assert set(on_disk) - set(HOSTILE_FILES) == {
        "docling/powerpoint_malformed_pictures.pptx.md",
        "qpdf/NOTICE.md",
    }


@pytest.fixture
def rlink_target() -> Iterator[Path]:
    """The local file rlink.docx's external relationship points at, with a secret in it."""
    created = not RLINK_TARGET.exists()
    if created:
        RLINK_TARGET.write_text(RLINK_SECRET)
    assert RLINK_SECRET in RLINK_TARGET.read_text()
    yield RLINK_TARGET
    if created:
        RLINK_TARGET.unlink(missing_ok=True)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("name", HOSTILE_FILES)
def test_a_hostile_file_is_refused_or_fails_readably_or_recovers(
    name: str,
    celery_worker: WorkerProcess,
    corpus: Path,
    rlink_target: Path,
) -> None:
    expect = EXPECTATIONS[name]
    source = factories.data_source()
    data = (corpus / "hostile" / name).read_bytes()
    state, value = _settle(_outcome(source, Path(name).name, data))
    _check(name, expect, state, value)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("name", list(GENERATED))
def test_a_generated_bomb_fails_with_a_readable_reason(
    name: str, celery_worker: WorkerProcess, tmp_path: Path
) -> None:
    build, pattern = GENERATED[name]
    path = tmp_path / name
    path.write_bytes(build())
    source = factories.data_source()
    state, value = _settle(_outcome(source, name, path.read_bytes()))
    _check(name, _e("rejected", "failed", message=pattern), state, value)


@pytest.mark.django_db(transaction=True)
def test_the_worker_survives_all_hostile_files_at_once(
    celery_worker: WorkerProcess, corpus: Path, rlink_target: Path
) -> None:
    source = factories.data_source()
    pending = {
        name: _outcome(
            source,
            Path(name).name.replace(".", f"-{i}.", 1),
            (corpus / "hostile" / name).read_bytes(),
        )
        for i, name in enumerate(HOSTILE_FILES)
    }
    for name, (build, _pattern) in GENERATED.items():
        pending[name] = _outcome(source, name, build())
    settled = {name: _settle(p) for name, p in pending.items()}
    problems = []
    for name, (state, value) in settled.items():
        expect = EXPECTATIONS.get(name) or _e("rejected", "failed", message=GENERATED[name][1])
        try:
            _check(name, expect, state, value)
        except AssertionError as exc:
            problems.append(f"{name}: {exc}")
    process = celery_worker.process
    assert process is not None and process.poll() is None, "the worker process died"
    normal = factories.upload(
        source,
        "after-the-storm.md",
        (corpus / "docling/md/duck.md").read_bytes(),
    ).file
    record = wait_for_status(normal.pk)
    assert record.status == "ready", record.error_message
    _assert_ready_provenance(record, _e("ready"))
    assert not problems, "\n".join(problems)


# --- conversion time limit, in-process ----------------------------------------------------


def _slow_pdf(pages: int) -> bytes:
    """``pages`` dense pages, each with its own chapter title: one page of text is
    drawn once and copied (drawing 60 lines on each of 900 pages took ~30 s)."""
    paragraph = " ".join(f"word{n} lorem ipsum dolor sit amet" for n in range(40))
    one = pymupdf.open()
    page = one.new_page()
    for row in range(60):
        page.insert_text((40, 90 + row * 12), f"{row} {paragraph}"[:120], fontsize=8)
    doc = pymupdf.open()
    for _ in range(pages):
        doc.insert_pdf(one)
    for number in range(pages):
        doc[number].insert_text((72, 60), f"Chapter {number + 1}", fontsize=18)
    data = doc.tobytes(garbage=1)
    doc.close()
    one.close()
    return data


@pytest.mark.django_db
def test_a_conversion_past_the_time_limit_fails_with_that_reason_and_keeps_the_bytes() -> None:
    import time

    from documents.converters.pdf import PdfConverter

    data = _slow_pdf(900)
    started = time.monotonic()
    PdfConverter().convert(data)
    elapsed = time.monotonic() - started
    assert elapsed > 2, f"the generated PDF converts in {elapsed:.2f}s: not past a 1 s limit"

    source = factories.data_source()
    record = factories.upload(source, "slow.pdf", data).file  # no commit: never queued
    assert record.status == "pending"
    with override_settings(PROVENANCE_CONVERT_TIMEOUT_SECONDS=1):
        assert ingestion.file_convert(file_id=str(record.pk)) is False
    record.refresh_from_db()
    assert record.status == "failed"
    assert_readable(record.error_message)
    assert re.search(r"longer than 1 s", record.error_message), record.error_message
    assert not record.markdowns.exists() and not Chunk.objects.filter(file=record).exists()
    with original_open(record.storage_key) as handle:
        stored = handle.read()
    assert hashlib.sha256(stored).hexdigest() == record.sha256 == hashlib.sha256(data).hexdigest()
