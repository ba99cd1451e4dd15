"""The shared corpus: the one place its path is written, and lists of its files
that are never empty.

A loop over an empty list asserts nothing and a parametrize over one is skipped,
so a moved or missing corpus would pass silently; every collected list goes
through ``nonempty`` (or ``corpus_files``, which uses it) and fails instead.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from pathlib import Path
from typing import TypeVar

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"

C = TypeVar("C", bound=Collection)


def nonempty(items: C, what: str) -> C:
    """``items``, asserted not empty (``what`` names them in the failure)."""
    assert len(items) > 0, f"no {what}: a test over them would check nothing"
    return items


def corpus_paths(
    pattern: str, *, under: str = "", recursive: bool = True, exclude: Iterable[str] = ()
) -> list[Path]:
    """Sorted corpus files matching ``pattern`` under ``under``, none of whose
    folders (relative to the corpus) is in ``exclude``; never empty."""
    root = CORPUS / under
    skipped = set(exclude)
    found = root.rglob(pattern) if recursive else root.glob(pattern)
    paths = sorted(
        p for p in found if p.is_file() and not skipped & set(p.relative_to(CORPUS).parts[:-1])
    )
    return nonempty(paths, f"{pattern} files under {root}")


def corpus_files(
    pattern: str, *, under: str = "", recursive: bool = True, exclude: Iterable[str] = ()
) -> list[str]:
    """``corpus_paths`` as names relative to the corpus (``docling/pdf/x.pdf``)."""
    paths = corpus_paths(pattern, under=under, recursive=recursive, exclude=exclude)
    return [p.relative_to(CORPUS).as_posix() for p in paths]
