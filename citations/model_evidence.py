"""The evidence of a model-written answer: every call to the model (prompt and raw
reply, hashed) and the verification of every claim of the reply that was kept,
written with the rest of the answer's evidence and chained with it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from citations.composition import NO_SUPPORTED_CLAIM, NOT_FOUND, Composition, compose_sentences
from citations.generators import Generation
from citations.generators.llm import sha256_json, storable
from citations.models import ClaimCheck, ClaimCitation, ModelCall, QueryExecution, RetrievalHit


def generation_compose(generation: Generation) -> Composition:
    """The answer: the supported sentences with their markers; when none is supported,
    a sentence that says why instead of pretending."""
    if generation.model_error is not None:
        error = generation.model_error
        fix = f" ({error['fix']})" if error.get("fix") else ""
        problem = f"{error['error']!r}{fix}"
        empty = f"The model stopped without answering: it reported a problem with {problem}."
    elif generation.checks:
        empty = NO_SUPPORTED_CLAIM
    else:
        empty = NOT_FOUND
    return compose_sentences(generation.claims, empty=storable(empty))


def _json(value: object) -> object:
    """A value as JSON stores it (the chain hashes the row as read back)."""
    return json.loads(storable(json.dumps(value, ensure_ascii=False, default=str)))


def model_calls_create(execution: QueryExecution, generation: Generation) -> list[ModelCall]:
    rows = [
        ModelCall(
            query=execution,
            attempt=call.attempt,
            provider=call.provider,
            model=call.model,
            response_model=call.response_model[:200],
            base_url=call.base_url[:500],
            prompt=_json(call.prompt),
            prompt_sha256=sha256_json(_json(call.prompt)),
            response_id=call.response_id[:200],
            raw_response=call.raw_response,
            response_sha256=hashlib.sha256(call.raw_response.encode()).hexdigest(),
            finish_reason=call.finish_reason[:60],
            input_tokens=call.input_tokens,
            output_tokens=call.output_tokens,
            latency_ms=call.latency_ms,
            transport_retries=call.transport_retries,
            contract_codes=list(call.contract_codes),
            wire=_json(dict(call.wire)),
            error=call.error,
        )
        for call in generation.calls
    ]
    return ModelCall.objects.bulk_create(rows)


def claim_checks_create(
    execution: QueryExecution,
    generation: Generation,
    call: ModelCall,
    hits: Sequence[RetrievalHit],
    *,
    composition: Composition,
    claim_rows: Sequence[ClaimCitation],
) -> list[ClaimCheck]:
    """One row per check; a supported one points at the claim citation it became."""
    became: dict[tuple[int | None, int | None], ClaimCitation] = {
        (composed.claim.sentence, composed.claim.passage): row
        for composed, row in zip(composition.claims, claim_rows, strict=True)
    }
    rows = []
    for check in generation.checks:
        rows.append(
            ClaimCheck(
                query=execution,
                model_call=call,
                claim=became.get((check.sentence, check.passage)) if check.supported else None,
                hit=hits[check.passage] if check.passage is not None else None,
                sentence=check.sentence,
                reply_sentence=storable(check.reply),
                supported=check.supported,
                reason=check.reason[:60],
                citation_type=check.citation_type[:40],
                snippet_id=storable(check.snippet_id),
                quote=storable(check.quote),
                document_index=check.document_index,
                document_title=storable(check.document_title),
                cited_block_index=check.cited_block_index,
                source_start=check.source_start,
                source_end=check.source_end,
                support_score=check.support,
                claimed=_json(dict(check.claimed)),
                alignment=check.alignment,
                edit_distance=check.edit_distance,
            )
        )
    return ClaimCheck.objects.bulk_create(rows)


def model_evidence_create(
    execution: QueryExecution,
    generation: Generation | None,
    hits: Sequence[RetrievalHit],
    composition: Composition,
    claim_rows: Sequence[ClaimCitation],
) -> list[ModelCall | ClaimCheck]:
    """The model calls and claim checks of an answer, in chain order (none for extractive)."""
    if generation is None or not generation.calls:
        return []
    calls = model_calls_create(execution, generation)
    checked = calls[generation.checked_call]
    checks = claim_checks_create(
        execution, generation, checked, hits, composition=composition, claim_rows=claim_rows
    )
    return [*calls, *checks]


def written_by(execution: QueryExecution) -> str:
    """``provider:model`` of the call whose reply was kept, or ``extractive`` (also when
    the app's model failed and the extractive generator answered instead)."""
    if execution.generator == "extractive":
        return "extractive"
    checked = ClaimCheck.objects.filter(query=execution).select_related("model_call").first()
    call = checked.model_call if checked else None
    call = call or ModelCall.objects.filter(query=execution).order_by("-attempt").first()
    if call is None:
        return "extractive" if execution.status == "completed" else ""
    return f"{call.provider}:{call.response_model or call.model}"
