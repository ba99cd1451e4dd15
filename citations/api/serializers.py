"""Response shapes of the source-citation document (v2 quoted sources, v1 citations)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from rest_framework import serializers
from rest_framework.request import Request

from citations.api import model_output
from citations.api.model_output import AuditableOutput, ClaimCheckOutput, ModelCallOutput
from citations.models import ClaimCitation, QueryExecution, QuotedSource, RetrievalHit
from citations.places import quoted_places

_MEMBERS_ONLY = (
    "internal: null unless the caller acts for the app's organization (a public app's "
    "other callers do not see it)"
)


class QueryInput(serializers.Serializer):
    query = serializers.CharField(allow_blank=True, trim_whitespace=False)


# The declared shapes below document the builders' dicts in the OpenAPI schema;
# tests/citations/test_openapi.py checks real responses against them, so they cannot drift.


class ConfidenceOutput(serializers.Serializer):
    level = serializers.CharField(
        allow_blank=True,
        help_text='"high", "medium" or "low"; empty for answers given before it was recorded',
    )
    note = serializers.CharField(allow_blank=True, help_text="the level explained in a sentence")


class QueryExecutionOutput(serializers.Serializer):
    query_id = serializers.UUIDField()
    llm_app_id = serializers.UUIDField()
    query = serializers.CharField()
    answer = serializers.CharField(help_text="the answer, each claim marked with [n]")
    status = serializers.CharField()
    created_at = serializers.DateTimeField()
    completed_at = serializers.DateTimeField(allow_null=True)
    latency_ms = serializers.FloatField(allow_null=True)
    retriever = serializers.CharField(help_text="the retriever that found the sources")
    index_hash = serializers.CharField()
    embed_model = serializers.CharField()
    analyzer = serializers.CharField()
    validator_status = serializers.CharField()
    quoted_sources_url = serializers.URLField()
    confidence = ConfidenceOutput(help_text="how far the answer can be trusted, in plain words")
    generator = serializers.CharField(
        allow_blank=True,
        help_text="the generator that wrote the answer: the app's, or extractive when the "
        "app's model could not give a verified answer (empty while running)",
    )
    fallback_reason = serializers.CharField(
        allow_blank=True,
        help_text="why the app's model did not write the answer: model_contract (nothing of "
        "its reply verified) or the model error's code (model_timeout, model_unavailable, …); "
        "empty when it did",
    )


class WindowOutput(serializers.Serializer):
    pre = serializers.IntegerField(
        help_text="the snippet's first characters the previous chunk holds too"
    )
    post = serializers.IntegerField(help_text="its last characters the next chunk holds too")


class CitationPayloadOutput(serializers.Serializer):
    """The retrieval-traceability document's citation for one retrieved unit."""

    doc_id = serializers.UUIDField()
    section_id = serializers.CharField(allow_blank=True)
    snippet_id = serializers.UUIDField()
    source_url = serializers.CharField(
        help_text="the chunk endpoint's absolute URL, on the origin the question was asked "
        "at (PROVENANCE_PUBLIC_URL when asked without a request); a path in answers "
        "recorded before it was absolute"
    )
    offsets = serializers.DictField(help_text='{"start", "end", "unit": "char"}')
    tokens = serializers.IntegerField()
    index_hash = serializers.CharField()
    embed_model = serializers.CharField()
    analyzer = serializers.CharField()
    rev = serializers.CharField()
    window = WindowOutput(
        required=False,
        help_text="pre and post context sizes in characters: what the snippet shares with "
        "its neighbours; absent in answers recorded before it was issued",
    )
    page = serializers.IntegerField(allow_null=True)
    score_raw = serializers.FloatField()
    score_norm = serializers.FloatField()
    rerank_score = serializers.FloatField(allow_null=True)
    k_pos = serializers.IntegerField()
    k_final = serializers.IntegerField(allow_null=True)


class RetrievalHitOutput(serializers.Serializer):
    k_pos = serializers.IntegerField()
    k_final = serializers.IntegerField(allow_null=True)
    retriever_type = serializers.CharField()
    score_raw = serializers.FloatField()
    score_norm = serializers.FloatField()
    rerank_score = serializers.FloatField(allow_null=True)
    citation = CitationPayloadOutput()


class QueryExecutionDetailOutput(QueryExecutionOutput):
    hits = RetrievalHitOutput(many=True)
    written_by = serializers.CharField(
        help_text="provider:model of the model that wrote the answer, or extractive"
    )
    auditable = AuditableOutput(help_text="the retrieval-traceability auditable answer block")
    model_calls = ModelCallOutput(many=True)
    claim_checks = ClaimCheckOutput(
        many=True, help_text="every claim of a model's reply, supported or not, and why"
    )


class QuotedDocumentOutput(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    title = serializers.CharField(allow_null=True)
    url = serializers.URLField()
    public_link = serializers.BooleanField()
    storage_name = serializers.CharField(allow_null=True, help_text=_MEMBERS_ONLY)
    data_source_id = serializers.UUIDField()
    organization_id = serializers.UUIDField(allow_null=True, help_text=_MEMBERS_ONLY)


class QuotedChunkOutput(serializers.Serializer):
    id = serializers.UUIDField()
    # the metaclass moves declared fields off the class: Serializer.data stays a property
    data = serializers.CharField()  # type: ignore[assignment]
    document_id = serializers.UUIDField()
    data_source_id = serializers.UUIDField()
    llm_app_id = serializers.UUIDField()
    user_id = serializers.IntegerField(allow_null=True, help_text=_MEMBERS_ONLY)
    flags = serializers.JSONField(allow_null=True)
    position = serializers.IntegerField()
    page_start = serializers.IntegerField(allow_null=True)
    page_end = serializers.IntegerField(allow_null=True)


class QuotedDataSourceOutput(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()


class QuotedSentenceOutput(serializers.Serializer):
    segment = serializers.IntegerField(help_text="the answer sentence's number, from 1")
    source_sentence = serializers.CharField()
    source_start_char_idx = serializers.IntegerField(help_text="offset in the chunk's text")
    source_end_char_idx = serializers.IntegerField()
    section = serializers.CharField(allow_blank=True)
    page_number = serializers.IntegerField(allow_null=True)
    line_number = serializers.IntegerField(help_text="line of the ingested Markdown")


class QuotedProvenanceOutput(serializers.Serializer):
    database_id = serializers.UUIDField()
    file_revision = serializers.IntegerField()
    file_sha256 = serializers.CharField()
    chunk_hash = serializers.CharField()
    section = serializers.CharField(allow_blank=True)
    line_number_start = serializers.IntegerField()
    line_number_end = serializers.IntegerField()
    chunk_url = serializers.URLField()
    quoted_sentences = QuotedSentenceOutput(many=True)


class QuotedSourceOutput(serializers.Serializer):
    quoted_as = serializers.CharField(help_text="the n of the answer's [n]")
    document = QuotedDocumentOutput()
    chunk = QuotedChunkOutput()
    data_source = QuotedDataSourceOutput()
    score = serializers.FloatField()
    retriever_type = serializers.CharField()
    provenance = QuotedProvenanceOutput()


class SentenceCitationOutput(serializers.Serializer):
    _id = serializers.CharField()
    created_at = serializers.DateTimeField()
    query_execution_id = serializers.UUIDField()
    total_count = serializers.IntegerField()
    reply_sentence = serializers.CharField()
    source_sentence = serializers.CharField()
    chunk_data_snapshot = serializers.CharField()
    start_char_idx = serializers.IntegerField()
    end_char_idx = serializers.IntegerField()
    source_start_char_idx = serializers.IntegerField()
    source_end_char_idx = serializers.IntegerField()
    quoted_as = serializers.CharField()
    chunk_id = serializers.UUIDField()
    chunk_page_start = serializers.IntegerField(allow_null=True, help_text="0-indexed")
    chunk_page_end = serializers.IntegerField(allow_null=True, help_text="0-indexed")
    chunk_position = serializers.IntegerField()
    document_id = serializers.UUIDField()
    document_name = serializers.CharField()
    document_title = serializers.CharField(allow_null=True)
    document_url = serializers.URLField()
    organization_id = serializers.UUIDField(allow_null=True, help_text=_MEMBERS_ONLY)
    threshold = serializers.IntegerField()


class SegmentValidationOutput(serializers.Serializer):
    segment = serializers.IntegerField()
    result = serializers.CharField()
    snippet_id = serializers.UUIDField()


class QueryValidationOutput(serializers.Serializer):
    query_id = serializers.UUIDField()
    result = serializers.CharField(help_text="ok, or the first segment's failure code")
    segments = SegmentValidationOutput(many=True)


class CitationValidateInput(serializers.Serializer):
    citations = serializers.ListField(
        child=serializers.DictField(),
        help_text="citation payloads as a query's hits carry them (`hits[].citation`); "
        "a missing field is what the validator reports, so none is required here",
    )
    allow_cross_section = serializers.BooleanField(required=False, default=False)


class CitationValidateOutput(serializers.Serializer):
    result = serializers.CharField(
        help_text="ok, or the first rule broken: empty_citations, missing_snippet_id, "
        "missing_<field>, bad_offsets, cross_section_reuse, missing_score, "
        "mismatch_index_hash, analyzer_mismatch, revision_mismatch, embed_model_mismatch "
        "or invalid_<field> (a field of the wrong type or range); a snippet of the caller's "
        "organization is also checked against the live index: its offsets must lie inside "
        "the stored chunk, in characters"
    )


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
        "confidence": {"level": execution.confidence, "note": execution.confidence_note},
        "generator": execution.generator,
        "fallback_reason": execution.fallback_reason,
    }


def _hit_output(hit: RetrievalHit) -> dict[str, Any]:
    return {
        "k_pos": hit.k_pos,
        "k_final": hit.k_final,
        "retriever_type": hit.retriever_type,
        "score_raw": hit.score_raw,
        "score_norm": hit.score_norm,
        "rerank_score": hit.rerank_score,
        "citation": hit.payload,
    }


def query_execution_detail_output(execution: QueryExecution, request: Request) -> dict[str, Any]:
    """A recorded answer with every retrieval hit and what the model did (if one wrote it)."""
    return query_execution_output(execution, request) | {
        "hits": [_hit_output(hit) for hit in execution.hits.order_by("k_pos")],
        "written_by": model_output.written_by(execution),
        "auditable": model_output.auditable_block(execution),
        "model_calls": model_output.model_calls_output(execution),
        "claim_checks": model_output.claim_checks_output(execution),
    }


def quoted_source_output(source: QuotedSource, request: Request, *, member: bool) -> dict[str, Any]:
    """One element of get-quoted-sources, field for field as documented, plus provenance;
    the internal fields (storage key, organization, asker) only for ``member`` callers."""
    file, execution = source.file, source.query
    return {
        "quoted_as": source.quoted_as,
        "document": {
            "id": str(file.pk),
            "name": source.document_name,
            "title": (source.chunk.markdown.metadata or {}).get("title") or None,
            "url": _content_url(request, file.pk),
            "public_link": False,
            "storage_name": file.storage_key if member else None,
            "data_source_id": str(source.data_source_id),
            "organization_id": str(file.organization_id) if member else None,
        },
        "chunk": {
            "id": str(source.chunk_id),
            "data": source.chunk_text,
            "document_id": str(file.pk),
            "data_source_id": str(source.data_source_id),
            "llm_app_id": str(execution.app_id),
            "user_id": execution.caller_user_id if member else None,
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
            "quoted_sentences": _quoted_sentences(source),
        },
    }


def _quoted_sentences(source: QuotedSource) -> list[dict[str, Any]]:
    """Each sentence the answer quotes from this source, with its own section, page
    and line (the chunk's may differ: it can take in more than one section)."""
    claims = list(source.claims.all())
    places = quoted_places(source=source)
    return [
        {
            "segment": claim.segment,
            "source_sentence": claim.source_sentence,
            "source_start_char_idx": claim.source_start,
            "source_end_char_idx": claim.source_end,
            "section": place.section,
            "page_number": place.page,
            "line_number": place.line,
        }
        for claim, place in zip(claims, places, strict=False)
    ]


def claim_output(
    claim: ClaimCitation, total: int, request: Request, threshold: float, *, member: bool
) -> dict:
    """One element of the deprecated v1 citations endpoint (pages are 0-indexed there);
    ``organization_id`` only for ``member`` callers."""
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
        "organization_id": str(source.file.organization_id) if member else None,
        "threshold": round(threshold * 100),
    }
