"""What a query's detail adds about who wrote the answer: the retrieval-traceability
document's auditable block ``{citations, answer, ΔS, λ}``, the model calls (hashes,
usage, latency, retries) and the check of every claim of a model's reply."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from citations.model_evidence import written_by  # noqa: F401 - part of the detail
from citations.models import ClaimCheck, ModelCall, QueryExecution, QuotedSource

AUDITABLE_FIELDS = ("snippet_id", "section_id", "source_url", "offsets", "tokens")


class AuditableOutput(serializers.Serializer):
    citations = serializers.ListField(
        child=serializers.DictField(),
        help_text="the payloads (snippet_id, section_id, source_url, offsets, tokens) of the "
        "quoted sources, in [n] order",
    )
    answer = serializers.CharField()

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        fields["ΔS"] = serializers.FloatField(
            allow_null=True, help_text="1 - the best retrieval score (ΔS of question and retrieved)"
        )
        fields["λ"] = serializers.CharField(help_text="convergent when an answer was found")
        return fields


class ModelCallOutput(serializers.Serializer):
    attempt = serializers.IntegerField()
    provider = serializers.CharField()
    model = serializers.CharField()
    response_model = serializers.CharField()
    base_url = serializers.CharField()
    response_id = serializers.CharField()
    prompt_sha256 = serializers.CharField()
    response_sha256 = serializers.CharField()
    finish_reason = serializers.CharField()
    input_tokens = serializers.IntegerField(allow_null=True)
    output_tokens = serializers.IntegerField(allow_null=True)
    latency_ms = serializers.FloatField()
    transport_retries = serializers.IntegerField()
    contract_codes = serializers.ListField(child=serializers.CharField())
    wire = serializers.DictField(
        help_text="what the server was asked with (response_format, stream, temperature, the "
        "length parameter, seed, the contract form), what it refused, and whether that was "
        "remembered from an earlier call"
    )
    error = serializers.CharField(
        allow_blank=True, help_text="why this call gave no reply to read, else empty"
    )


class ClaimCheckOutput(serializers.Serializer):
    sentence = serializers.IntegerField(help_text="the sentence's place in the reply, from 0")
    reply_sentence = serializers.CharField()
    supported = serializers.BooleanField()
    reason = serializers.CharField(help_text="supported, or why the claim is not")
    quoted_as = serializers.CharField(allow_null=True)
    citation_type = serializers.CharField()
    snippet_id = serializers.CharField()
    quote = serializers.CharField(allow_blank=True)
    source_start = serializers.IntegerField(allow_null=True)
    source_end = serializers.IntegerField(allow_null=True)
    support_score = serializers.FloatField(allow_null=True)
    alignment = serializers.CharField(
        allow_blank=True,
        help_text="how the quote was found in the chunk: exact, normalised (case, quotes, "
        "dashes), ellipsis (pieces in order) or near (within edit_distance)",
    )
    edit_distance = serializers.IntegerField(allow_null=True)
    attempt = serializers.IntegerField()


def auditable_block(execution: QueryExecution) -> dict[str, Any]:
    sources = QuotedSource.objects.filter(query=execution).select_related("hit")
    ordered = sorted(sources, key=lambda s: int(s.quoted_as))
    trace = execution.traces.filter(seg=0).first()
    return {
        "citations": [{f: s.hit.payload.get(f) for f in AUDITABLE_FIELDS} for s in ordered],
        "answer": execution.answer,
        "ΔS": round(trace.deltaS, 6) if trace else None,
        "λ": trace.lambda_state if trace else "",
    }


def model_calls_output(execution: QueryExecution) -> list[dict[str, Any]]:
    fields = list(ModelCallOutput().fields)
    return [
        {f: getattr(call, f) for f in fields}
        for call in ModelCall.objects.filter(query=execution).defer("prompt", "raw_response")
    ]


def claim_checks_output(execution: QueryExecution) -> list[dict[str, Any]]:
    checks = ClaimCheck.objects.filter(query=execution).select_related(
        "claim__quoted_source", "model_call"
    )
    return [
        {
            "sentence": c.sentence,
            "reply_sentence": c.reply_sentence,
            "supported": c.supported,
            "reason": c.reason,
            "quoted_as": c.claim.quoted_source.quoted_as if c.claim else None,
            "citation_type": c.citation_type,
            "snippet_id": c.snippet_id,
            "quote": c.quote,
            "source_start": c.source_start,
            "source_end": c.source_end,
            "support_score": c.support_score,
            "alignment": c.alignment,
            "edit_distance": c.edit_distance,
            "attempt": c.model_call.attempt,
        }
        for c in checks
    ]
