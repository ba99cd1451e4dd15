"""``GET …/query-executions/{query_id}/reasoning``: how the answer was found, step by
step (the cot-source-attribution document's ``ChainOfThoughtOutput`` fields), with
``source_summary`` exactly as its ``format_sources_for_display`` shapes it."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from rest_framework import serializers
from rest_framework.request import Request

from citations.models import QueryExecution, ReasoningStep, StepSourceAttribution
from citations.reasoning.selectors import Reasoning, reasoning_of, source_summary_display


class SourceAttributionOutput(serializers.Serializer):
    document_id = serializers.CharField(help_text="the document's id across its revisions")
    document_title = serializers.CharField(allow_null=True)
    relevance_score = serializers.FloatField(help_text="score_norm × the step's confidence")
    excerpt = serializers.CharField(allow_null=True, help_text="≤ 200 characters it quotes")
    chunk_index = serializers.IntegerField(allow_null=True, help_text="the chunk's position")
    retrieval_rank = serializers.IntegerField(
        allow_null=True, help_text="1-based rank in the step's retrieval"
    )
    quoted_as = serializers.CharField(help_text="its [n] in the step's answer")
    final_quoted_as = serializers.CharField(
        allow_null=True, help_text="its [n] in the final answer"
    )
    score_norm = serializers.FloatField()
    chunk_id = serializers.UUIDField()
    file_id = serializers.UUIDField()
    file_revision = serializers.IntegerField()
    chunk_url = serializers.URLField()
    file_url = serializers.URLField()


class ReasoningStepOutput(serializers.Serializer):
    step_number = serializers.IntegerField()
    question = serializers.CharField()
    intermediate_answer = serializers.CharField(help_text="with the step's own [n] markers")
    confidence_score = serializers.FloatField()
    reasoning_trace = serializers.CharField()
    execution_time = serializers.FloatField(help_text="seconds")
    outcome = serializers.ChoiceField(choices=["answered", "unanswered", "no_hits"])
    uses_steps = serializers.ListField(child=serializers.IntegerField())
    source_attributions = SourceAttributionOutput(many=True)
    context_used = serializers.ListField(child=serializers.CharField())


class PrimarySourceOutput(serializers.Serializer):
    document_id = serializers.CharField()
    title = serializers.CharField()
    relevance = serializers.FloatField()
    excerpt = serializers.CharField(allow_null=True)


class StepBreakdownOutput(serializers.Serializer):
    step_number = serializers.IntegerField()
    sources_used = serializers.IntegerField()
    document_ids = serializers.ListField(child=serializers.CharField())


class SourceSummaryOutput(serializers.Serializer):
    total_sources = serializers.IntegerField()
    primary_sources = PrimarySourceOutput(many=True)
    step_breakdown = serializers.DictField(
        child=StepBreakdownOutput(), help_text='keyed "step_1", "step_2", …'
    )


class ReasoningOutput(serializers.Serializer):
    query_id = serializers.UUIDField()
    reasoning = serializers.ChoiceField(
        choices=["single", "steps"], help_text="single: the answer was not made in steps"
    )
    original_question = serializers.CharField()
    final_answer = serializers.CharField()
    reasoning_steps = ReasoningStepOutput(many=True)
    source_summary = SourceSummaryOutput()


def _attribution(row: StepSourceAttribution, request: Request, excerpts: bool) -> dict:
    chunk_path = reverse("chunk-detail", args=[row.chunk.vector_database_id, row.chunk_id])
    return {
        "document_id": row.document_id,
        "document_title": row.document_title,
        "relevance_score": row.relevance_score,
        "excerpt": row.excerpt if excerpts else None,
        "chunk_index": row.chunk_index,
        "retrieval_rank": row.retrieval_rank,
        "quoted_as": row.quoted_as,
        "final_quoted_as": row.final_source.quoted_as if row.final_source else None,
        "score_norm": row.score_norm,
        "chunk_id": str(row.chunk_id),
        "file_id": str(row.file_id),
        "file_revision": row.file_revision,
        "chunk_url": request.build_absolute_uri(chunk_path),
        "file_url": request.build_absolute_uri(reverse("file-content", args=[row.file_id])),
    }


def _step(step: ReasoningStep, request: Request, excerpts: bool) -> dict[str, Any]:
    return {
        "step_number": step.step_number,
        "question": step.question,
        "intermediate_answer": step.intermediate_answer,
        "confidence_score": step.confidence_score,
        "reasoning_trace": step.reasoning_trace,
        "execution_time": step.execution_time,
        "outcome": step.outcome,
        "uses_steps": list(step.uses_steps),
        "source_attributions": [
            _attribution(a, request, excerpts) for a in step.source_attributions.all()
        ],
        "context_used": list(step.context_used),
    }


def reasoning_output(
    execution: QueryExecution, request: Request, *, include_excerpts: bool
) -> dict[str, Any]:
    reasoning: Reasoning = reasoning_of(execution=execution)
    return {
        "query_id": str(execution.pk),
        "reasoning": "steps" if reasoning.stepped else "single",
        "original_question": execution.question,
        "final_answer": execution.answer,
        "reasoning_steps": [_step(s, request, include_excerpts) for s in reasoning.steps],
        "source_summary": source_summary_display(reasoning, include_excerpts=include_excerpts),
    }


def include_excerpts_param(raw: str | None) -> bool | None:
    """``include_excerpts``: true (default) or false; None for anything else."""
    if raw is None:
        return True
    return {"true": True, "1": True, "false": False, "0": False}.get(raw.strip().lower())
