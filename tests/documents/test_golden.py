"""Golden snapshots: every corpus PDF, DOCX and PPTX converts exactly as stored.

A failure is a change users will see (Markdown, pages, boxes or a refusal). If
it is meant, write the snapshots again (``tests.golden.regenerate``) and review
``git diff tests/golden``; see docs/conversion.md, "Golden snapshots".
"""

from __future__ import annotations

import difflib
from pathlib import PurePath

import pytest

from tests.golden.snapshots import (
    REGENERATE,
    SNAPSHOTS,
    SNIFF_BYTES,
    SUFFIXES,
    Snapshot,
    corpus_documents,
    snapshot_files_stored,
    snapshots_take,
)

DOCUMENTS = corpus_documents()
DIFF_LINES = 80  # of a failing snapshot's diff shown


@pytest.fixture(scope="module")
def taken() -> dict[str, Snapshot]:
    """Today's snapshots of the whole corpus, converted two at a time."""
    return {shot.document: shot for shot in snapshots_take(DOCUMENTS)}


def test_the_corpus_has_documents_of_every_snapshotted_kind() -> None:
    assert DOCUMENTS
    assert {PurePath(document).suffix.lower() for document in DOCUMENTS} == set(SUFFIXES)


def test_snapshots_sniff_the_head_an_upload_is_sniffed_from() -> None:
    from documents.uploads import _SNIFF_BYTES

    assert SNIFF_BYTES == _SNIFF_BYTES


@pytest.mark.parametrize("document", DOCUMENTS)
def test_the_conversion_matches_its_golden_snapshot(
    document: str, taken: dict[str, Snapshot]
) -> None:
    for path, text in taken[document].files().items():
        assert path.exists(), f"no snapshot {path.relative_to(SNAPSHOTS)}: run {REGENERATE}"
        stored = path.read_bytes().decode("utf-8")
        if stored != text:
            pytest.fail(_diff(stored, text, path.relative_to(SNAPSHOTS).as_posix()))


def test_no_snapshot_is_left_without_its_document(taken: dict[str, Snapshot]) -> None:
    wanted = {path for shot in taken.values() for path in shot.files()}
    stale = sorted(path.relative_to(SNAPSHOTS).as_posix() for path in snapshot_files_stored())
    stale = [name for name in stale if SNAPSHOTS / name not in wanted]
    assert not stale, f"snapshots of no corpus document (run {REGENERATE}): {stale}"


def _diff(stored: str, today: str, name: str) -> str:
    """A unified diff of the snapshot against today's output, cut to ``DIFF_LINES``."""
    lines = list(
        difflib.unified_diff(
            stored.split("\n"),
            today.split("\n"),
            fromfile=f"{name} (stored)",
            tofile=f"{name} (converted today)",
            lineterm="",
        )
    )
    more = len(lines) - DIFF_LINES
    shown = lines[:DIFF_LINES] + ([f"… {more} more diff lines"] if more > 0 else [])
    return f"{name} differs from its snapshot (if meant: {REGENERATE}):\n" + "\n".join(shown)
