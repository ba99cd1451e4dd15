"""Response shapes of the source-citation document (v2 quoted sources, v1 citations)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from rest_framework import serializers
from rest_framework.request import Request

from citations.models import ClaimCitation, QueryExecution, QuotedSource


class QueryInput(serializers.Serializer):
    query = serializers.CharField(allow_blank=True, trim_whitespace=False)


def _content_url(request: Request, file_id: object) -> str:
    return request.build_absolute_uri(reverse("file-content", args=[file_id]))


def query_execution_output(execution: QueryExecution, request: Request) -> dict[str, Any]:
    app_id = execution.app_id
    return {
        "query_id": str(execution.pk),
        "llm_app_id": str(app_id),
        "query": execution.question,
        "answer": execution.answer,
        "status": execution.status,
        "created_at": execution.created_at,
        "completed_at": execution.completed_at,
        "latency_ms": execution.latency_ms,
        "retriever": execution.retriever,
        "index_hash": execution.index_hash,
        "embed_model": execution.embed_model,
        "analyzer": execution.analyzer,
        "validator_status": execution.validator_status,
        "quoted_sources_url": request.build_absolute_uri(
            f"/semantics/apps/{app_id}/query-execution-sources/{execution.pk}/get-quoted-sources"
        ),
    }


def quoted_source_output(source: QuotedSource, request: Request) -> dict[str, Any]:
    """One element of get-quoted-sources, field for field as documented, plus provenance."""
    file, execution = source.file, source.query
    return {
        "quoted_as": source.quoted_as,
        "document": {
            "id": str(file.pk),
            "name": source.document_name,
            "title": None,
            "url": _content_url(request, file.pk),
            "public_link": False,
            "storage_name": file.storage_key,
            "data_source_id": str(source.data_source_id),
            "organization_id": str(file.organization_id),
        },
        "chunk": {
            "id": str(source.chunk_id),
            "data": source.chunk_text,
            "document_id": str(file.pk),
            "data_source_id": str(source.data_source_id),
            "llm_app_id": str(execution.app_id),
            "user_id": execution.caller_user_id,
            "flags": None,
            "position": source.chunk_position,
            "page_start": source.page_start,
            "page_end": source.page_end,
        },
        "data_source": {"id": str(source.data_source_id), "name": source.data_source_name},
        "score": source.score,
        "retriever_type": source.retriever_type,
        "provenance": {
            "database_id": str(source.chunk.vector_database_id),
            "file_revision": source.file_revision,
            "file_sha256": source.file_sha256,
            "chunk_hash": source.chunk_hash,
            "section": source.section,
            "line_number_start": source.line_number_start,
            "line_number_end": source.line_number_end,
            "chunk_url": request.build_absolute_uri(
                reverse("chunk-detail", args=[source.chunk.vector_database_id, source.chunk_id])
            ),
        },
    }


def claim_output(claim: ClaimCitation, total: int, request: Request, threshold: float) -> dict:
    """One element of the deprecated v1 citations endpoint (pages are 0-indexed there)."""
    source = claim.quoted_source

    def zero_based(page: int | None) -> int | None:
        return page - 1 if page is not None else None

    return {
        "_id": str(claim.pk),
        "created_at": claim.created_at,
        "query_execution_id": str(claim.query_id),
        "total_count": total,
        "reply_sentence": claim.reply_sentence,
        "source_sentence": claim.source_sentence,
        "chunk_data_snapshot": f" [...] {claim.source_sentence} [...] ",
        "start_char_idx": claim.reply_start,
        "end_char_idx": claim.reply_end,
        "source_start_char_idx": claim.source_start,
        "source_end_char_idx": claim.source_end,
        "quoted_as": source.quoted_as,
        "chunk_id": str(source.chunk_id),
        "chunk_page_start": zero_based(source.page_start),
        "chunk_page_end": zero_based(source.page_end),
        "chunk_position": source.chunk_position,
        "document_id": str(source.file_id),
        "document_name": source.document_name,
        "document_title": None,
        "document_url": _content_url(request, source.file_id),
        "organization_id": str(source.file.organization_id),
        "threshold": round(threshold * 100),
    }
