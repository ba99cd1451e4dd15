"""Invariant 8, part two: equal scores are ordered by
(score_norm desc, section asc, snippet_id asc)."""

from __future__ import annotations

from pathlib import Path

import pytest

from citations.llm_apps import app_create
from citations.models import RetrievalHit
from citations.services import query_execute
from documents.models import Chunk
from tests import factories
from tests.conftest import wait_for_status
from tests.support import squad
from tests.support.tamper import triggers_off
from tests.support.worker import WorkerProcess

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def test_equal_scores_fall_back_to_section_then_snippet_id(
    celery_worker: WorkerProcess, corpus: Path
) -> None:
    paragraphs = squad.load(corpus)[5]["paragraphs"]
    filler, shared = paragraphs[0]["context"], paragraphs[1]["context"]
    source = factories.data_source()
    files = []
    for name, heading in (("b.md", "Beta"), ("a1.md", "Alpha"), ("a2.md", "Alpha")):
        # the second chunk of each file has identical text under a different heading
        document = f"# {heading}\n\n{filler}\n\n{shared}\n".encode()
        files.append(factories.upload(source, name, document).file)
    for record in files:
        assert wait_for_status(record.pk).status == "ready"
    # each chunk is embedded and indexed with its context (document, section), so the
    # same text in three files no longer scores the same: give the three copies one
    # vector and no context, and their scores tie exactly, as the invariant supposes
    copies = Chunk.objects.filter(file__in=files, chunk_text=shared)
    assert copies.count() == 3
    original = copies.first()
    assert original is not None
    with triggers_off():
        copies.update(context="", embedding=original.embedding)
    app = app_create(organization=source.organization, name="Tie", data_source_names=[source.name])
    execution = query_execute(app=app, question=shared[:200])
    hits = list(
        RetrievalHit.objects.filter(query=execution).order_by("k_pos").select_related("chunk")
    )
    tied = [h for h in hits if h.chunk.chunk_text == shared]
    assert len(tied) == 3, [h.chunk.chunk_text[:40] for h in hits]
    assert len({(h.score_raw, h.score_norm) for h in tied}) == 1, "scores must tie exactly"
    assert [h.section for h in tied] == ["Alpha", "Alpha", "Beta"]
    assert str(tied[0].chunk_id) < str(tied[1].chunk_id)
    assert [h.k_pos for h in tied] == sorted(h.k_pos for h in tied)
    assert tied[-1].k_pos - tied[0].k_pos == 2, "the tied hits are adjacent"
