"""Reads of a stepped answer: its steps with their stored attributions, as the
cot-source-attribution document's schemas, and the source summary made by its
service, for the REST endpoint, the pages, the admin and the run steps alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Prefetch, QuerySet

from citations.models import QueryExecution, ReasoningStep, RetrievalHit, StepSourceAttribution
from citations.reasoning.attribution import (
    ReasoningStep as StepSchema,
)
from citations.reasoning.attribution import (
    SourceAttribution,
    SourceAttributionService,
    SourceSummary,
)


def steps_of(*, execution: QueryExecution) -> QuerySet[ReasoningStep]:
    """The answer's steps in order, each with its attributions (and their final [n])."""
    attributions = StepSourceAttribution.objects.select_related(
        "final_source__file", "file", "chunk"
    ).defer("chunk__embedding", "chunk__chunk_text")
    return (
        ReasoningStep.objects.filter(query=execution)
        .prefetch_related(Prefetch("source_attributions", queryset=attributions.order_by("id")))
        .order_by("step_number")
    )


def step_hits(*, step: ReasoningStep) -> QuerySet[RetrievalHit]:
    """The hits of the step's own retrieval (its range of the answer's k_pos)."""
    if step.hits_from is None:
        return RetrievalHit.objects.none()
    return (
        RetrievalHit.objects.filter(
            query_id=step.query_id, k_pos__range=(step.hits_from, step.hits_to)
        )
        .select_related("file", "chunk")
        .defer("chunk__embedding")
        .order_by("k_pos")
    )


def attribution_schema(row: StepSourceAttribution) -> SourceAttribution:
    return SourceAttribution(
        document_id=row.document_id,
        relevance_score=row.relevance_score,
        document_title=row.document_title,
        excerpt=row.excerpt,
        chunk_index=row.chunk_index,
        retrieval_rank=row.retrieval_rank,
    )


def step_schema(step: ReasoningStep) -> StepSchema:
    return StepSchema(
        step_number=step.step_number,
        question=step.question,
        intermediate_answer=step.intermediate_answer,
        confidence_score=step.confidence_score,
        reasoning_trace=step.reasoning_trace,
        execution_time=step.execution_time,
        source_attributions=[attribution_schema(a) for a in step.source_attributions.all()],
        context_used=list(step.context_used),
    )


@dataclass(frozen=True)
class Reasoning:
    """A stepped answer as read back: the stored steps, the document's schemas of
    them and the source summary (empty for a single-step app's answer)."""

    steps: list[ReasoningStep]
    schemas: list[StepSchema]
    summary: SourceSummary

    @property
    def stepped(self) -> bool:
        return bool(self.steps)


def reasoning_of(*, execution: QueryExecution) -> Reasoning:
    steps = list(steps_of(execution=execution))
    schemas = [step_schema(s) for s in steps]
    summary = SourceAttributionService().aggregate_sources_across_steps(schemas)
    return Reasoning(steps, schemas, summary)


def source_summary_display(reasoning: Reasoning, *, include_excerpts: bool) -> dict[str, Any]:
    """The document's ``format_sources_for_display`` of the answer's summary."""
    return SourceAttributionService().format_sources_for_display(
        reasoning.summary, include_excerpts=include_excerpts
    )


@dataclass(frozen=True)
class StepSourceCard:
    """A source of one step as a page shows it, with the viewer of its final [n]."""

    attribution: StepSourceAttribution
    viewer_url: str


@dataclass(frozen=True)
class StepCard:
    step: ReasoningStep
    sources: list[StepSourceCard]


@dataclass(frozen=True)
class ReasoningPage:
    """ "How this answer was found": the steps and the primary sources."""

    steps: list[StepCard]
    primary: list[dict[str, Any]]
    total_sources: int


def reasoning_page(*, execution: QueryExecution, viewer: Any) -> ReasoningPage | None:
    """The steps of a stepped answer (None for a single-step one); ``viewer(source)``
    is the page's URL of a final quoted source (the web viewer, or the admin's)."""
    reasoning = reasoning_of(execution=execution)
    if not reasoning.stepped:
        return None
    cards = [
        StepCard(
            step,
            [
                StepSourceCard(a, viewer(a.final_source) if a.final_source else "")
                for a in step.source_attributions.all()
            ],
        )
        for step in reasoning.steps
    ]
    shown = source_summary_display(reasoning, include_excerpts=True)
    return ReasoningPage(cards, shown["primary_sources"], shown["total_sources"])
