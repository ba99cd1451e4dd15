"""Page words packed between the convert and chunk stages: exact on every corpus
PDF, still readable from a worker of the previous version, refused when damaged
(they come from the sandbox child, which reads hostile files)."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest

from documents.word_boxes import (
    UNPACKED_LIMIT,
    DocumentWords,
    pdf_page_words,
    words_pack,
    words_unpack,
)
from tests.support.corpus import CORPUS, corpus_paths

PDFS = corpus_paths("*.pdf", exclude=("hostile",))
BOX = struct.pack("<4f", 0, 0, 1, 1)
MULTIPAGE = CORPUS / "py-pdf-sample-files/004-pdflatex-4-pages/pdflatex-4-pages.pdf"


def _as_read(pages: list) -> list[list[list]]:
    return [[[*w[:4], w[4]] for w in page] for page in pages]


@pytest.mark.parametrize("path", PDFS, ids=lambda p: p.name)
def test_every_word_and_box_comes_back_exactly(path: Path) -> None:
    pages = pdf_page_words(path.read_bytes())
    unpacked = words_unpack(words_pack(pages))
    assert len(unpacked) == len(pages)
    assert [unpacked[i] for i in range(len(unpacked))] == _as_read(pages)


def test_pages_are_unpacked_when_asked_for_and_only_those_exist() -> None:
    pages = pdf_page_words(MULTIPAGE.read_bytes())
    unpacked = words_unpack(words_pack(pages))
    assert len(pages) == 4 and all(pages)
    assert unpacked[-1] == unpacked[3] == _as_read(pages)[3]
    with pytest.raises(IndexError):
        unpacked[4]
    words = DocumentWords(unpacked)
    assert words(5) is None and words(0) is None
    page, original = words(2), DocumentWords(pages)(2)
    assert page is not None and original is not None
    assert [w.text for w in page.words] == [w.text for w in original.words]


def test_words_kept_by_the_previous_version_are_still_read() -> None:
    pages = _as_read(pdf_page_words(MULTIPAGE.read_bytes()))
    legacy = zlib.compress(json.dumps(pages, separators=(",", ":")).encode(), 1)
    assert words_unpack(legacy) == pages


def _packed(counts: object, texts: object, boxes: bytes) -> bytes:
    head, body = json.dumps(counts).encode(), json.dumps(texts).encode()
    sizes = struct.pack("<II", len(head), len(body))
    return b"words/2\n" + zlib.compress(sizes + head + body + boxes)


@pytest.mark.parametrize(
    "packed",
    [
        pytest.param(b"words/2\n" + zlib.compress(b"\x01\x00"), id="cut-short"),
        pytest.param(_packed([2], ["a"], BOX), id="counts-too-many"),
        pytest.param(_packed([1], ["a", "b"], BOX), id="texts-too-many"),
        pytest.param(_packed([1], ["a"], struct.pack("<8f", *range(8))), id="boxes-too-many"),
        pytest.param(_packed([1], ["a"], b"\x00" * 12), id="box-incomplete"),
        pytest.param(_packed([1], [7], BOX), id="text-not-text"),
        pytest.param(_packed([-1, 2], ["a"], BOX), id="negative-count"),
        pytest.param(_packed({"a": 1}, ["a"], BOX), id="counts-not-list"),
        pytest.param(b"words/2\nnot zlib", id="not-compressed"),
    ],
)
def test_damaged_packings_are_refused(packed: bytes) -> None:
    with pytest.raises((ValueError, zlib.error)):
        words_unpack(packed)


def _legacy(pages: object) -> bytes:
    return zlib.compress(json.dumps(pages).encode())


@pytest.mark.parametrize(
    "packed",
    [
        pytest.param(_legacy({"a": 1}), id="not-pages"),
        pytest.param(_legacy([[["x"]]]), id="word-too-short"),
        pytest.param(_legacy([[[0, 0, "1", 1, "x"]]]), id="box-not-numbers"),
        pytest.param(_legacy([[[0, 0, 1, 1, 7]]]), id="text-not-text"),
        pytest.param(_legacy([[[True, 0, 1, 1, "x"]]]), id="box-of-booleans"),
        pytest.param(_legacy([[0, 0, 1, 1, "x"]]), id="page-of-numbers"),
        pytest.param(zlib.compress(b"[" * 10)[:-3], id="cut-short"),
    ],
)
def test_damaged_words_of_the_previous_version_are_refused(packed: bytes) -> None:
    """A compromised child chooses whether to send the new packing's first bytes:
    the JSON path is checked as strictly, before any page is used."""
    with pytest.raises(ValueError):
        words_unpack(packed)


@pytest.mark.parametrize("prefix", [b"words/2\n", b""], ids=["packed", "legacy"])
def test_a_packing_that_inflates_past_the_limit_is_refused(prefix: bytes) -> None:
    """~260 MB of zeros compress to ~250 KB: never inflated in the worker."""
    inflater = zlib.compressobj(9)
    bomb = inflater.compress(b"\0" * (UNPACKED_LIMIT + 1024 * 1024)) + inflater.flush()
    assert len(bomb) < 2 * 1024 * 1024
    with pytest.raises(ValueError, match="limit"):
        words_unpack(prefix + bomb)
