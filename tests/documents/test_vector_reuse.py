"""A document converted again, or uploaded as a new revision, runs only the text
that changed through the model: a chunk whose exact text an earlier conversion
of the same document embedded in the same vector database gets that vector.

How many chunks the model ran on is read from the embed stage's log line per
batch ("embedded N chunks of FILE"), the figure an operator sees.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np
import pytest

from documents import ingestion
from documents.chunk_context import embedding_text
from documents.models import Chunk, DataSource, DocumentMarkdown, File
from retrieval.embedders import default_embedder
from retrieval.models import VectorDatabase
from tests import factories
from tests.support import squad
from tests.support.tamper import triggers_off

# in the test's transaction: an upload's pipeline message is queued only on commit, so a
# session worker alive in this process never races the stages run here
pytestmark = pytest.mark.django_db
_EMBEDDED = re.compile(r"embedded (\d+) chunks of (\S+):")


def _handbook(corpus: Path, *, changed: bool = False) -> bytes:
    """Two SQuAD articles as one Markdown document; ``changed`` rewrites one paragraph."""
    text = "\n".join(squad.article_markdown(a) for a in squad.load(corpus)[:2])
    if changed:
        paragraph = text.split("## Paragraph 3\n\n", 1)[1].split("\n", 1)[0]
        text = text.replace(paragraph, "This paragraph was rewritten for the second revision.")
    return text.encode()


def _ingest(record: File) -> File:
    for stage in (ingestion.file_convert, ingestion.file_chunk, ingestion.file_embed):
        stage(file_id=str(record.pk))
    record.refresh_from_db()
    assert record.status == "ready", record.error_message
    return record


def _model_runs(caplog: pytest.LogCaptureFixture, record: File) -> int:
    """Chunks of ``record`` the model embedded, by the embed stage's log."""
    return sum(
        int(m.group(1))
        for r in caplog.records
        if (m := _EMBEDDED.match(r.getMessage())) and m.group(2) == str(record.pk)
    )


def _vectors(markdown: DocumentMarkdown) -> dict[str, np.ndarray]:
    return {
        text: np.asarray(vector)
        for text, vector in Chunk.objects.filter(markdown=markdown).values_list(
            "chunk_text", "embedding"
        )
    }


def test_a_new_revision_embeds_only_the_chunks_whose_text_changed(
    corpus: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="documents.ingestion")
    source = factories.data_source()
    first = _ingest(factories.upload(source, "handbook.md", _handbook(corpus)).file)
    second = _ingest(factories.upload(source, "handbook.md", _handbook(corpus, changed=True)).file)
    assert second.revision == 2 and second.document_id == first.document_id

    before = _vectors(first.markdowns.get(is_active=True))
    after = _vectors(second.markdowns.get(is_active=True))
    kept = set(before) & set(after)
    new = set(after) - kept
    assert kept and new, "the revision repeats most chunks and changes some"
    assert _model_runs(caplog, first) == len(before)
    assert _model_runs(caplog, second) == len(new)
    assert all(np.array_equal(after[text], before[text]) for text in kept)
    # the changed chunks went through the model: each vector is its own text's, read
    # with its context as the embed stage reads it
    contexts = dict(
        Chunk.objects.filter(markdown=second.markdowns.get(is_active=True)).values_list(
            "chunk_text", "context"
        )
    )
    read = [embedding_text(text, contexts[text]) for text in sorted(new)]
    fresh = default_embedder().embed_documents(read)
    for text, vector in zip(sorted(new), fresh, strict=True):
        assert float(np.dot(after[text], vector)) > 0.999
    assert second.progress_done == second.progress_total == len(after)


def test_converting_again_with_the_same_text_runs_the_model_on_nothing(
    corpus: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="documents.ingestion")
    record = _ingest(factories.upload(factories.data_source(), "a.md", _handbook(corpus)).file)
    old = record.markdowns.get(is_active=True)
    # the state a converter upgrade leaves: the published Markdown is an older version's
    with triggers_off():
        DocumentMarkdown.objects.filter(pk=old.pk).update(converter_version="0.9.0")
    File.objects.filter(pk=record.pk).update(status="pending")
    caplog.clear()
    _ingest(record)
    new = record.markdowns.get(is_active=True)
    assert new.pk != old.pk
    assert _model_runs(caplog, record) == 0
    assert f"reused {len(_vectors(new))} vectors of earlier conversions" in caplog.text
    old_vectors, new_vectors = _vectors(old), _vectors(new)
    assert set(new_vectors) == set(old_vectors)
    assert all(np.array_equal(new_vectors[t], old_vectors[t]) for t in new_vectors)


def test_vectors_are_not_taken_from_another_document_or_another_tenant(
    corpus: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="documents.ingestion")
    source = factories.data_source()
    _ingest(factories.upload(source, "handbook.md", _handbook(corpus)).file)
    # the same text under another name: another document, embedded by the model
    copy = _ingest(factories.upload(source, "copy.md", _handbook(corpus)).file)
    # the same name and text in another organisation's source and vector database
    other_source = factories.data_source(factories.organization("Globex"), "Human Resources")
    other = _ingest(factories.upload(other_source, "handbook.md", _handbook(corpus)).file)
    for record in (copy, other):
        chunks = Chunk.objects.filter(file=record).count()
        assert _model_runs(caplog, record) == chunks > 0
    assert "reused" not in caplog.text


def test_vectors_stay_in_their_vector_database(
    corpus: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The same document re-pointed at another index of its organisation: its next
    revision is embedded by the model, not given the other index's vectors."""
    caplog.set_level(logging.INFO, logger="documents.ingestion")
    source = factories.data_source()
    first = _ingest(factories.upload(source, "handbook.md", _handbook(corpus)).file)
    other = VectorDatabase.objects.create(
        organization=source.organization,
        name="second index",
        embed_model=source.vector_database.embed_model,
        embed_dimensions=source.vector_database.embed_dimensions,
    )
    DataSource.objects.filter(pk=source.pk).update(vector_database=other)
    source.refresh_from_db()
    second = _ingest(factories.upload(source, "handbook.md", _handbook(corpus, changed=True)).file)
    assert second.revision == 2 and second.document_id == first.document_id
    chunks = Chunk.objects.filter(file=second)
    assert set(chunks.values_list("vector_database_id", flat=True)) == {other.pk}
    assert _model_runs(caplog, second) == chunks.count() > 0
    assert "reused" not in caplog.text
