"""Exporting answers with their full provenance, streamed so 10,000 records
never sit in memory at once."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator

from django.db import models
from django.db.models import Prefetch, QuerySet, prefetch_related_objects

from citations.models import (
    ClaimCheck,
    ClaimCitation,
    ModelCall,
    QueryExecution,
    QuotedSource,
    ReasoningStep,
    StepSourceAttribution,
)

# records fetched (with their sources and claims) per round trip: memory stays
# proportional to this, not to the size of the export
CHUNK = 100

CSV_COLUMNS = [
    "query_id",
    "created_at",
    "organization",
    "app",
    "caller",
    "caller_address",
    "caller_user_agent",
    "question",
    "answer",
    "status",
    "validator_status",
    "index_hash",
    "embed_model",
    "analyzer",
    "latency_ms",
    "quoted_as",
    "document",
    "file_id",
    "revision",
    "file_sha256",
    "page_start",
    "page_end",
    "line_number_start",
    "line_number_end",
    "section",
    "chunk_id",
    "chunk_hash",
    "score",
    "retriever_type",
    "quoted_text",
]


def _with_provenance(queryset: QuerySet[QueryExecution]) -> Iterator[QueryExecution]:
    """Records in primary-key order, a page at a time (keyset pagination), each
    page with its sources and claims; nothing else is held between pages."""
    sources = QuotedSource.objects.order_by("id")
    claims = (
        ClaimCitation.objects.select_related("quoted_source")
        .defer("quoted_source__chunk_text")
        .order_by("segment")
    )
    pages = queryset.select_related("app", "organization").order_by("pk")
    last = None
    while True:
        page = pages.filter(pk__gt=last) if last is not None else pages
        batch = list(page[:CHUNK])
        if not batch:
            return
        prefetch_related_objects(
            batch,
            Prefetch("quoted_sources", queryset=sources),
            Prefetch("claim_citations", queryset=claims),
            Prefetch("model_calls", queryset=ModelCall.objects.order_by("attempt")),
            Prefetch("claim_checks", queryset=ClaimCheck.objects.order_by("model_call", "id")),
            Prefetch("reasoning_steps", queryset=_steps()),
        )
        yield from batch
        last = batch[-1].pk
        for record in batch:  # prefetched children point back at their parent: break
            # the cycles so pages free at once (Django's prefetch cache: not in the stubs)
            record._prefetched_objects_cache.clear()  # type: ignore[attr-defined]


class _Echo:
    def write(self, value: str) -> str:
        return value


# a spreadsheet runs a cell starting with one of these as a formula; questions and
# answers are anyone's text ("=HYPERLINK(...)"), so such a cell is opened with a
# quote, as OWASP advises for CSV exports; the JSON export keeps the exact text
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: object) -> object:
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def _row(values: list) -> list:
    return [_cell(value) for value in values]


def _base_row(execution: QueryExecution) -> list:
    return [
        execution.pk,
        execution.created_at.isoformat(),
        execution.organization.name,
        execution.app.name,
        execution.caller,
        execution.caller_address or "",
        execution.caller_user_agent,
        execution.question,
        execution.answer,
        execution.status,
        execution.validator_status,
        execution.index_hash,
        execution.embed_model,
        execution.analyzer,
        execution.latency_ms,
    ]


def csv_rows(queryset: QuerySet[QueryExecution]) -> Iterator[str]:
    """One line per quoted source (or one line for an answer that cites nothing)."""
    writer = csv.writer(_Echo())
    yield writer.writerow(CSV_COLUMNS)
    for execution in _with_provenance(queryset):
        base = _base_row(execution)
        sources = list(execution.quoted_sources.all())
        if not sources:
            yield writer.writerow(_row(base + [""] * (len(CSV_COLUMNS) - len(base))))
        for s in sources:
            yield writer.writerow(
                _row(
                    base
                    + [
                        s.quoted_as,
                        s.document_name,
                        s.file_id,
                        s.file_revision,
                        s.file_sha256,
                        s.page_start,
                        s.page_end,
                        s.line_number_start,
                        s.line_number_end,
                        s.section,
                        s.chunk_id,
                        s.chunk_hash,
                        s.score,
                        s.retriever_type,
                        s.chunk_text,
                    ]
                )
            )


def quoted_source_record(source: QuotedSource) -> dict:
    """One quoted source as the JSON export and ``ask --json`` give it."""
    return {
        "quoted_as": source.quoted_as,
        "document": source.document_name,
        "file_id": str(source.file_id),
        "revision": source.file_revision,
        "file_sha256": source.file_sha256,
        "page_start": source.page_start,
        "page_end": source.page_end,
        "line_number_start": source.line_number_start,
        "line_number_end": source.line_number_end,
        "section": source.section,
        "chunk_id": str(source.chunk_id),
        "chunk_hash": source.chunk_hash,
        "score": source.score,
        "retriever_type": source.retriever_type,
        "text": source.chunk_text,
    }


def record_json(execution: QueryExecution) -> dict:
    return {
        "query_id": str(execution.pk),
        "created_at": execution.created_at.isoformat(),
        "organization": execution.organization.name,
        "app": {"id": str(execution.app_id), "name": execution.app.name},
        "caller": execution.caller,
        "caller_address": execution.caller_address,
        "caller_user_agent": execution.caller_user_agent,
        "question": execution.question,
        "answer": execution.answer,
        "status": execution.status,
        "validator_status": execution.validator_status,
        "index_hash": execution.index_hash,
        "embed_model": execution.embed_model,
        "analyzer": execution.analyzer,
        "latency_ms": execution.latency_ms,
        "quoted_sources": [quoted_source_record(s) for s in execution.quoted_sources.all()],
        "claims": [
            {
                "quoted_as": c.quoted_source.quoted_as,
                "reply_sentence": c.reply_sentence,
                "reply_start": c.reply_start,
                "reply_end": c.reply_end,
                "source_sentence": c.source_sentence,
                "source_start": c.source_start,
                "source_end": c.source_end,
            }
            for c in execution.claim_citations.all()
        ],
        "model_calls": [_model_call_record(c) for c in execution.model_calls.all()],
        "claim_checks": [_claim_check_record(c) for c in execution.claim_checks.all()],
        "reasoning_steps": [_step_record(s) for s in execution.reasoning_steps.all()],
    }


def _steps() -> QuerySet[ReasoningStep]:
    attributions = StepSourceAttribution.objects.select_related("final_source").order_by("id")
    return ReasoningStep.objects.order_by("step_number").prefetch_related(
        Prefetch("source_attributions", queryset=attributions)
    )


def _fields(row: models.Model, skip: tuple[str, ...]) -> dict:
    return {
        f.attname: getattr(row, f.attname)
        for f in row._meta.concrete_fields
        if f.attname not in skip
    }


def _step_record(step: ReasoningStep) -> dict:
    """A step of an answer made in steps, with what it cites (its [n] and the answer's)."""
    record = _fields(step, ("query_id",))
    record["source_attributions"] = [
        {
            **_fields(a, ("query_id", "step_id", "final_source_id")),
            "final_quoted_as": a.final_source.quoted_as if a.final_source else None,
        }
        for a in step.source_attributions.all()
    ]
    return record


def _model_call_record(call: ModelCall) -> dict:
    """A model call as exported: the prompt and the raw reply whole, with their hashes."""
    fields = [f.attname for f in ModelCall._meta.concrete_fields if f.attname != "query_id"]
    return {name: getattr(call, name) for name in fields}


def _claim_check_record(check: ClaimCheck) -> dict:
    fields = [f.attname for f in ClaimCheck._meta.concrete_fields if f.attname != "query_id"]
    return {name: getattr(check, name) for name in fields}


def json_chunks(queryset: QuerySet[QueryExecution]) -> Iterator[str]:
    """A JSON array, written record by record."""
    yield "["
    first = True
    for execution in _with_provenance(queryset):
        yield ("" if first else ",\n") + json.dumps(record_json(execution), default=str)
        first = False
    yield "]\n"
