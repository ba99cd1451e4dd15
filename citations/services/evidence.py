"""Recording an answer: its hits, quoted sources, claims, traces and confidence,
written and chained in one transaction that completes the execution."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Protocol

from django.db import models, transaction
from django.utils import timezone

from audit.ledger import ledger_append
from citations.composition import Composition
from citations.confidence import Confidence, answer_confidence
from citations.generators import Generation, Passage
from citations.model_evidence import model_evidence_create
from citations.models import (
    ClaimCitation,
    QueryExecution,
    QueryStatus,
    QuotedSource,
    RagTrace,
    RetrievalHit,
)
from citations.payload import revision_label
from citations.services.abandoning import QueryAbandoned
from citations.services.searching import Retrieved, passage_title
from citations.tracing import TraceSegment, trace_emit, trace_line
from citations.validation import validate_citations


class SteppedEvidence(Protocol):
    """What a stepped answer writes besides the rows every answer has."""

    def record(
        self,
        execution: QueryExecution,
        hits: list[RetrievalHit],
        sources: dict[int, QuotedSource],
        claims: list[ClaimCitation],
    ) -> list[models.Model]: ...


@transaction.atomic
def evidence_record(
    execution: QueryExecution,
    retrieved: list[Retrieved],
    composition: Composition,
    *,
    index_hash: str,
    embed_model: str,
    analyzer: str,
    payload_of: Callable[[Retrieved], dict],
    started: float,
    generation: Generation | None = None,
    stepped: SteppedEvidence | None = None,
    written_by: tuple[str, str] = ("", ""),
    rerank: Mapping[int, float] | None = None,
    probability: float | None = None,
) -> None:
    """``analyzer`` is the read path's (the searcher checked the index's against it);
    ``payload_of`` issues a hit's citation payload as the generator was given it;
    ``written_by``: the generator that wrote the answer, and why the app's model did
    not when it fell back to another. ``rerank``: the answer scorer's probability per
    scored passage (its hit's ``rerank_score``; ``k_final`` is the order it makes);
    ``probability``: the extractive answer's, which its confidence is read from."""
    retrieved = reranked(retrieved, rerank or {})
    scores = rerank or {}
    hits = [
        RetrievalHit(
            query=execution,
            chunk=r.chunk,
            file=r.chunk.file,
            file_revision=r.chunk.file.revision,
            chunk_hash=r.chunk.content_hash,
            section=r.chunk.section,
            retriever_type=r.hit.retriever_type,
            score_raw=r.hit.score_raw,
            score_norm=r.hit.score_norm,
            semantic_rank=r.hit.semantic_rank,
            lexical_rank=r.hit.lexical_rank,
            k_pos=r.k_pos,
            k_final=r.k_final,
            rerank_score=scores.get(i),
            payload={**payload_of(r), "rerank_score": scores.get(i)},
        )
        for i, r in enumerate(retrieved)
    ]
    RetrievalHit.objects.bulk_create(hits)
    sources = _quoted_sources(execution, retrieved, hits, composition)
    segments, claims = _claims(
        execution, retrieved, hits, composition, sources, read_analyzer=analyzer
    )
    validator_status = (
        "ok"
        if all(s.lambda_state == "convergent" for s in segments)
        else next(s.lambda_state for s in segments if s.lambda_state != "convergent")
    )
    if not composition.claims:
        validator_status = "empty_citations"
    now = timezone.now()
    confidence = _confidence(execution.question, retrieved, composition, probability)
    traces = _traces(
        execution,
        retrieved,
        segments,
        composition,
        index_hash=index_hash,
        embed_model=embed_model,
        analyzer=analyzer,
        now=now,
    )
    completed = QueryExecution.objects.filter(pk=execution.pk, status=QueryStatus.RUNNING).update(
        answer=composition.answer,
        status=QueryStatus.COMPLETED,
        index_hash=index_hash,
        embed_model=embed_model,
        analyzer=analyzer,
        validator_status=validator_status,
        latency_ms=(time.perf_counter() - started) * 1000,
        completed_at=now,
        confidence=confidence.level,
        confidence_note=confidence.note,
        generator=written_by[0],
        fallback_reason=written_by[1],
    )
    if not completed:  # swept as stale meanwhile: this transaction's rows are rolled back
        raise QueryAbandoned(f"query execution {execution.pk} was failed while it was answered")
    quoted = sorted(sources.values(), key=lambda s: int(s.quoted_as))
    model: Sequence[models.Model]
    if stepped is None:
        model = model_evidence_create(execution, generation, hits, composition, claims)
    else:  # the steps, what each cites, and the model calls that answered them
        model = stepped.record(execution, hits, sources, claims)
    ledger_append([execution, *hits, *quoted, *claims, *traces, *model])


def reranked(retrieved: list[Retrieved], rerank: Mapping[int, float]) -> list[Retrieved]:
    """The hits (in retrieval order) with ``k_final`` their place in the scorer's order:
    scored passages by probability, then the unscored ones in retrieval order."""
    if not rerank:
        return retrieved
    order = sorted(range(len(retrieved)), key=lambda i: (i not in rerank, -rerank.get(i, 0.0), i))
    place = {i: n for n, i in enumerate(order, start=1)}
    return [replace(r, k_final=place[i]) for i, r in enumerate(retrieved)]


def _confidence(
    question: str,
    retrieved: list[Retrieved],
    composition: Composition,
    probability: float | None,
) -> Confidence:
    """The answer's plain-language confidence: from the answer scorer's probability
    for an extractive answer, else read from its first quote in its chunk."""
    passages = [
        Passage(i, r.chunk.chunk_text, r.hit.score_norm, passage_title(r), None, r.chunk.context)
        for i, r in enumerate(retrieved)
    ]
    claims = [composed.claim for composed in composition.claims]
    return answer_confidence(
        question=question, claims=claims, passages=passages, probability=probability
    )


def _quoted_sources(
    execution: QueryExecution,
    retrieved: list[Retrieved],
    hits: list[RetrievalHit],
    composition: Composition,
) -> dict[int, QuotedSource]:
    sources: dict[int, QuotedSource] = {}
    for passage, quoted_as in composition.quoted.items():
        chunk, hit = retrieved[passage].chunk, hits[passage]
        sources[passage] = QuotedSource(
            query=execution,
            quoted_as=quoted_as,
            hit=hit,
            chunk=chunk,
            file=chunk.file,
            file_revision=chunk.file.revision,
            file_sha256=chunk.file.sha256,
            document_name=chunk.file.name,
            data_source_id=chunk.file.data_source_id,
            data_source_name=chunk.file.data_source.name,
            chunk_hash=chunk.content_hash,
            chunk_text=chunk.chunk_text,
            chunk_position=chunk.position,
            section=chunk.section,
            page_start=chunk.page_start,
            page_end=chunk.page_end,
            line_number_start=chunk.line_number_start,
            line_number_end=chunk.line_number_end,
            score=hit.score_norm,
            retriever_type=hit.retriever_type,
        )
    QuotedSource.objects.bulk_create(sorted(sources.values(), key=lambda s: int(s.quoted_as)))
    return sources


def _claims(
    execution: QueryExecution,
    retrieved: list[Retrieved],
    hits: list[RetrievalHit],
    composition: Composition,
    sources: dict[int, QuotedSource],
    *,
    read_analyzer: str,
) -> tuple[list[TraceSegment], list[ClaimCitation]]:
    rows: list[ClaimCitation] = []
    segments: list[TraceSegment] = []
    for seg, composed in enumerate(composition.claims, start=1):
        claim, chunk = composed.claim, retrieved[composed.claim.passage].chunk
        hit = hits[claim.passage]
        rows.append(
            ClaimCitation(
                query=execution,
                quoted_source=sources[claim.passage],
                segment=seg,
                reply_sentence=composed.reply,
                reply_start=composed.reply_start,
                reply_end=composed.reply_end,
                source_sentence=chunk.chunk_text[claim.source_start : claim.source_end],
                source_start=claim.source_start,
                source_end=claim.source_end,
                relevance=claim.relevance,
            )
        )
        code = validate_citations(
            [hit.payload],
            read_analyzer=read_analyzer,
            revisions={str(chunk.pk): revision_label(chunk.file.revision, chunk.file.sha256)},
        )
        segments.append(
            TraceSegment(
                seg=seg,
                delta_s=max(0.0, 1 - claim.relevance),
                lambda_state="convergent" if code == "ok" else code,
                section_id=chunk.section,
                rev=hit.payload["rev"],
                citations=[str(chunk.pk)],
                scores=[hit.score_norm],
                kpos=[hit.k_pos],
                kfinal=[hit.k_final],
            )
        )
    ClaimCitation.objects.bulk_create(rows)
    return segments, rows


def _traces(
    execution: QueryExecution,
    retrieved: list[Retrieved],
    segments: list[TraceSegment],
    composition: Composition,
    *,
    index_hash: str,
    embed_model: str,
    analyzer: str,
    now: datetime,
) -> list[RagTrace]:
    top = retrieved[0] if retrieved else None
    question_segment = TraceSegment(
        seg=0,
        delta_s=1 - (top.hit.score_norm if top else 0.0),
        lambda_state="convergent" if composition.claims else "divergent",
        section_id=top.chunk.section if top else "",
        rev=revision_label(top.chunk.file.revision, top.chunk.file.sha256) if top else "",
        citations=[str(r.chunk.pk) for r in retrieved],
        scores=[r.hit.score_norm for r in retrieved],
        kpos=[r.k_pos for r in retrieved],
        kfinal=[r.k_final for r in retrieved],
    )
    rows = []
    for segment in [question_segment, *segments]:
        line = trace_line(
            ts=now,
            qid=str(execution.pk),
            k=len(retrieved),
            index_hash=index_hash,
            embed_model=embed_model,
            segment=segment,
        )
        trace_emit(line)
        rows.append(
            RagTrace(
                query=execution,
                ts=now,
                qid=str(execution.pk),
                seg=segment.seg,
                deltaS=segment.delta_s,
                lambda_state=segment.lambda_state,
                store="pgvector",
                index_hash=index_hash,
                embed_model=embed_model,
                analyzer=analyzer,
                section_id=segment.section_id,
                rev=segment.rev,
                citations=list(segment.citations),
                scores=list(segment.scores),
                kpos=list(segment.kpos),
                kfinal=list(segment.kfinal),
                line=line,
            )
        )
    return RagTrace.objects.bulk_create(rows)
