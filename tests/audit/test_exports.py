"""An export of thousands of answers streams: memory stays flat while it is read.

2,500 answers quoting 11 KB each (27 MB of quoted text) show it as well as
10,000 of 2.7 KB did, for a quarter of the per-record work: an export that held
its records would peak above the whole text, a streaming one holds one page."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from citations import exports
from citations.models import QueryExecution, QuotedSource, RetrievalHit
from citations.services import query_execute
from tests.audit.conftest import Trail

pytestmark = pytest.mark.django_db

RECORDS = 2_500
PASSAGE = "Invoices are kept for seven years after the end of the fiscal year. " * 160


def _many_answers(trail: Trail) -> None:
    model = query_execute(app=trail.acme_app, question="How long are invoices kept?")
    hit = RetrievalHit.objects.filter(query=model).first()
    source = QuotedSource.objects.filter(query=model).first()
    assert hit is not None and source is not None
    executions = QueryExecution.objects.bulk_create(
        QueryExecution(
            app=model.app,
            organization=model.organization,
            question=f"Question {i}",
            answer=f"Answer {i} [1]",
            status="completed",
            caller="api-key:bulk",
            index_hash=model.index_hash,
        )
        for i in range(RECORDS)
    )
    hits = RetrievalHit.objects.bulk_create(
        RetrievalHit(
            query=e,
            chunk_id=hit.chunk_id,
            file_id=hit.file_id,
            file_revision=1,
            chunk_hash=hit.chunk_hash,
            retriever_type=hit.retriever_type,
            score_raw=hit.score_raw,
            score_norm=hit.score_norm,
            k_pos=1,
            k_final=1,
            payload=hit.payload,
        )
        for e in executions
    )
    QuotedSource.objects.bulk_create(
        QuotedSource(
            query=e,
            quoted_as="1",
            hit=h,
            chunk_id=source.chunk_id,
            file_id=source.file_id,
            file_revision=1,
            file_sha256=source.file_sha256,
            document_name=source.document_name,
            data_source_id=source.data_source_id,
            data_source_name=source.data_source_name,
            chunk_hash=source.chunk_hash,
            chunk_text=PASSAGE,
            chunk_position=0,
            line_number_start=1,
            line_number_end=3,
            score=0.5,
            retriever_type=source.retriever_type,
        )
        for e, h in zip(executions, hits, strict=True)
    )


def test_thousands_of_large_records_stream_in_bounded_memory(trail: Trail) -> None:
    _many_answers(trail)
    queryset = QueryExecution.objects.filter(caller="api-key:bulk")
    total_text = RECORDS * len(PASSAGE)
    for produce in (exports.json_chunks, exports.csv_rows):
        tracemalloc.start()
        size, records = 0, 0
        for piece in produce(queryset):
            size += len(piece)
            records += piece.count("Question ")
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert records == RECORDS
        assert size > total_text
        assert peak < total_text / 4, f"{produce.__name__} peaked at {peak / 1e6:.1f} MB"
    first_three = list(queryset.order_by("pk").values_list("pk", flat=True)[:3])
    parsed = json.loads("".join(exports.json_chunks(queryset.filter(pk__in=first_three))))
    assert len(parsed) == 3 and parsed[0]["quoted_sources"][0]["text"] == PASSAGE
