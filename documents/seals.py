"""Seals: what each published conversion held, chained as evidence, re-derived on
verification.

The database refuses edits of a published revision's Markdown, chunks and
locations (migration 0015), but an owner with triggers off is not refused. The
seal records, when the revision is published, the original's sha256 and size, the
Markdown's sha256, every chunk's id, position, offsets and hash, and a digest of
the locations; it joins the keyed chain, so it cannot be rewritten to match. The
verifier re-hashes every sealed chunk's text and names the first that differs.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator

from django.db import transaction

from audit.ledger import ledger_append
from documents.models import Chunk, DocumentMarkdown, Location, RevisionSeal

_LOCATION_COLUMNS = (
    "chunk_id",
    "ordinal",
    "line_number_start",
    "line_number_end",
    "char_start",
    "char_end",
    "hierarchy",
    "page_number",
    "boxes",
)
_BATCH = 2000  # chunks read at a time by the verifier: bounded memory on large revisions


def _text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def locations_digest(markdown_id: uuid.UUID) -> str:
    """SHA-256 over every location of the Markdown's chunks, in chunk and ordinal
    order, as canonical JSON lines (ids as text)."""
    digest = hashlib.sha256()
    rows = (
        Location.objects.filter(chunk__markdown_id=markdown_id)
        .order_by("chunk__position", "ordinal")
        .values_list(*_LOCATION_COLUMNS)
    )
    for row in rows.iterator(chunk_size=_BATCH):
        line = json.dumps([str(row[0]), *row[1:]], sort_keys=True, separators=(",", ":"))
        digest.update(line.encode() + b"\n")
    return digest.hexdigest()


def _sealed_chunks(markdown_id: uuid.UUID) -> list[list[object]]:
    rows = (
        Chunk.objects.filter(markdown_id=markdown_id)
        .order_by("position")
        .values_list("pk", "position", "content_hash", "char_start", "char_end")
    )
    return [[str(pk), *rest] for pk, *rest in rows]


@transaction.atomic
def revision_seal(markdown: DocumentMarkdown) -> RevisionSeal:
    """Seal ``markdown`` (being published) and chain the seal; a Markdown published
    again (a rollback) keeps its first seal."""
    existing = RevisionSeal.objects.filter(markdown=markdown).first()
    if existing is not None:
        return existing
    record = markdown.file
    seal = RevisionSeal.objects.create(
        organization_id=record.organization_id,
        file=record,
        markdown=markdown,
        original_sha256=record.sha256,
        original_size=record.size,
        markdown_sha256=markdown.sha256,
        chunks=_sealed_chunks(markdown.pk),
        locations_digest=locations_digest(markdown.pk),
    )
    ledger_append([seal])
    return seal


def revisions_unsealed() -> int:
    """Seal every published Markdown that has no seal yet (revisions published before
    seals existed, sealed by ``migrate``); how many were sealed."""
    unsealed = DocumentMarkdown.objects.filter(
        published_at__isnull=False, seal__isnull=True
    ).select_related("file")
    sealed = 0
    for markdown in unsealed.order_by("published_at").iterator(chunk_size=200):
        revision_seal(markdown)
        sealed += 1
    return sealed


def revisions_sealed_after_migrate(**kwargs: object) -> None:
    """``migrate`` seals the revisions published before this release sealed them."""
    from django.db import connection

    if "documents_revisionseal" in connection.introspection.table_names():
        revisions_unsealed()


def seal_problem(seal: RevisionSeal) -> str:
    """The first way the sealed revision no longer is what was sealed ("" if none)."""
    markdown = DocumentMarkdown.objects.select_related("file").get(pk=seal.markdown_id)
    record, where = markdown.file, f"file {seal.file_id} ({markdown.file.name!r})"
    if (record.sha256, record.size) != (seal.original_sha256, seal.original_size):
        return f"{where}: its original's recorded sha256 or size changed since it was sealed"
    if markdown.sha256 != seal.markdown_sha256 or _text_hash(markdown.markdown) != markdown.sha256:
        return f"{where}: its Markdown {markdown.pk} is not the text that was sealed"
    problem = _chunks_problem(seal, where)
    if problem:
        return problem
    if locations_digest(seal.markdown_id) != seal.locations_digest:
        return f"{where}: the locations of its chunks changed since they were sealed"
    return ""


def _stored_chunks(markdown_id: uuid.UUID) -> Iterator[tuple]:
    rows = (
        Chunk.objects.filter(markdown_id=markdown_id)
        .order_by("position")
        .values_list("pk", "position", "content_hash", "char_start", "char_end", "chunk_text")
    )
    yield from rows.iterator(chunk_size=_BATCH)


def _chunks_problem(seal: RevisionSeal, where: str) -> str:
    """The first chunk whose text, hash, position or offsets differ from the seal's,
    or a chunk added or removed."""
    sealed = iter(seal.chunks)
    for pk, position, content_hash, start, end, text in _stored_chunks(seal.markdown_id):
        expected = next(sealed, None)
        name = f"{where}: chunk {pk} (position {position})"
        if expected is None or expected[0] != str(pk):
            return f"{name} was not in the sealed revision (chunks added or removed)"
        if _text_hash(text) != expected[2]:
            return f"{name}: its text no longer hashes to the sealed {expected[2]}"
        if [position, content_hash, start, end] != expected[1:]:
            return f"{name}: its hash, position or offsets changed since it was sealed"
    missing = next(sealed, None)
    if missing is not None:
        return f"{where}: chunk {missing[0]} (position {missing[1]}) was removed"
    return ""


def seals_verify() -> str:
    """Re-derive every sealed revision; the first problem, or "" (registered with the
    ledger's verifier in DocumentsConfig.ready)."""
    published = DocumentMarkdown.objects.filter(published_at__isnull=False, seal__isnull=True)
    unsealed = published.values_list("pk", flat=True).first()
    if unsealed is not None:
        return f"documents_documentmarkdown {unsealed}: published but never sealed"
    for seal in RevisionSeal.objects.order_by("created_at", "pk").iterator(chunk_size=100):
        problem = seal_problem(seal)
        if problem:
            return problem
    return ""
