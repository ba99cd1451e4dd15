"""The Responses API's wire format, built from a ``ResponseRecord`` and its query
execution: a ``file_search_call`` item (the question searched, and with
``include=["file_search_call.results"]`` every retrieved chunk) and a ``message``
item whose ``output_text`` carries a ``file_citation`` annotation per ``[n]``
marker, ``index`` being where the marker stands in the text. Item ids derive from
the response's id, so the stream and a later ``GET`` name the same items."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import Sum
from django.urls import reverse

from citations.models import QueryExecution, ResponseRecord, ResponseStatus
from citations.reasoning.selectors import steps_of
from citations.threads.sources import cited_markers
from documents.models import Chunk

ATTRIBUTE_CHARS = 512  # OpenAI's limit on an attribute's string value


def _unix(moment: Any) -> int | None:
    return int(moment.timestamp()) if moment is not None else None


def item_id(response: ResponseRecord, prefix: str) -> str:
    return f"{prefix}_{uuid.uuid5(response.pk, prefix).hex}"


def annotations_of(execution: QueryExecution) -> list[dict[str, Any]]:
    """One ``file_citation`` per ``[n]`` marker, in the order of the claims; besides
    OpenAI's fields, the chunk it quotes (``chunk_id``, ``vector_store_id``), the
    marker and the quoted sentence, which lead to the passage."""
    cited = cited_markers(execution=execution)
    stores = dict(
        Chunk.objects.filter(pk__in={c.source.chunk_id for c in cited}).values_list(
            "pk", "vector_database_id"
        )
    )
    return [
        {
            "type": "file_citation",
            "file_id": str(c.source.file_id),
            "filename": c.source.document_name,
            "index": c.start,
            "text": c.marker,
            "chunk_id": str(c.source.chunk_id),
            "vector_store_id": str(stores[c.source.chunk_id]),
            "quote": c.claim.source_sentence,
        }
        for c in cited
    ]


def _attributes(hit: Any, absolute: Any) -> dict[str, Any]:
    chunk = hit.chunk
    values = {
        "chunk_id": str(hit.chunk_id),
        "vector_store_id": str(chunk.vector_database_id),
        "file_revision": hit.file_revision,
        "section": hit.section[:ATTRIBUTE_CHARS],
        "line_start": chunk.line_number_start,
        "line_end": chunk.line_number_end,
        "page": chunk.page_start,
        "chunk_url": absolute(reverse("chunk-detail", args=[chunk.vector_database_id, chunk.pk])),
    }
    return {key: value for key, value in values.items() if value is not None}


def _results(execution: QueryExecution, absolute: Any) -> list[dict[str, Any]]:
    hits = execution.hits.select_related("file", "chunk").defer("chunk__embedding")
    return [
        {
            "file_id": str(hit.file_id),
            "filename": hit.file.name,
            "score": round(min(1.0, max(0.0, hit.score_norm)), 6),
            "text": hit.chunk.chunk_text,
            "attributes": _attributes(hit, absolute),
        }
        for hit in hits.order_by("k_pos")
    ]


def file_search_item(
    response: ResponseRecord, *, status: str, include_results: bool, absolute: Any = str
) -> dict[str, Any]:
    """The search: the question (and a stepped answer's sub-questions) as ``queries``."""
    execution = response.query
    queries = [response.question]
    if execution is not None:
        queries += [step.question for step in steps_of(execution=execution)]
    results = None
    if include_results and execution is not None:
        results = _results(execution, absolute)
    return {
        "id": item_id(response, "fs"),
        "type": "file_search_call",
        "status": status,
        "queries": queries if status == "completed" else [],
        "results": results,
    }


def output_text(execution: QueryExecution) -> dict[str, Any]:
    return {
        "type": "output_text",
        "text": execution.answer,
        "annotations": annotations_of(execution),
        "logprobs": [],
    }


def message_item(response: ResponseRecord, content: list[dict], status: str) -> dict[str, Any]:
    return {
        "id": item_id(response, "msg"),
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": content,
    }


def usage_of(execution: QueryExecution | None) -> dict[str, Any]:
    """The tokens the answer's model calls spent (none for the extractive generator)."""
    totals: dict[str, Any] = {}
    if execution is not None:
        totals = execution.model_calls.aggregate(
            prompt=Sum("input_tokens"), completion=Sum("output_tokens")
        )
    prompt, completion = totals.get("prompt") or 0, totals.get("completion") or 0
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + completion,
    }


def _error(response: ResponseRecord) -> dict[str, str] | None:
    if response.status != ResponseStatus.FAILED:
        return None
    return {"code": response.error_code or "server_error", "message": response.error_message}


def response_output(
    response: ResponseRecord, *, include_results: bool = False, absolute: Any = str
) -> dict[str, Any]:
    """OpenAI's response object; ``absolute`` turns a path into the caller's URL."""
    output: list[dict[str, Any]] = []
    execution = response.query
    if response.status == ResponseStatus.COMPLETED and execution is not None:
        output = [
            file_search_item(
                response, status="completed", include_results=include_results, absolute=absolute
            ),
            message_item(response, [output_text(execution)], "completed"),
        ]
    finished = response.status != ResponseStatus.IN_PROGRESS
    return {
        "id": str(response.pk),
        "object": "response",
        "created_at": _unix(response.created_at),
        "status": response.status,
        "completed_at": _unix(response.completed_at),
        "error": _error(response),
        "incomplete_details": None,
        "instructions": response.instructions or None,
        "metadata": response.metadata,
        "model": str(response.app_id),
        "output": output,
        "parallel_tool_calls": False,
        "previous_response_id": str(response.previous_id) if response.previous_id else None,
        "temperature": None,
        "top_p": None,
        "max_output_tokens": None,
        "tool_choice": "auto",
        "tools": response.tools,
        "text": {"format": {"type": "text"}},
        "truncation": "disabled",
        "store": True,
        "background": False,
        "user": None,
        "usage": usage_of(execution) if finished else None,
        "query_id": str(response.query_id) if response.query_id else None,
        "generator": execution.generator or None if execution is not None else None,
        "fallback_reason": execution.fallback_reason if execution is not None else None,
    }
