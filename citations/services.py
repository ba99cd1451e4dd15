"""Answering a question: retrieve, generate, compose, and record the evidence.

The QueryExecution row is written before the work (status ``running``) and
completed afterwards; all evidence rows of one answer are written in one
transaction, with snapshots of what they cite.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol, TypedDict
from uuid import UUID

import numpy as np
from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser, User
from django.db import models, transaction
from django.utils import timezone

from audit.ledger import ledger_append
from citations.composition import Composition, compose
from citations.confidence import Confidence, answer_confidence
from citations.generators import Generation, ModelGenerator, Passage, generator_for
from citations.markers import markers_match
from citations.model_evidence import generation_compose, model_evidence_create
from citations.models import (
    App,
    ClaimCitation,
    QueryExecution,
    QueryStatus,
    QuotedSource,
    RagTrace,
    Reasoning,
    RetrievalHit,
)
from citations.payload import citation_payload, revision_label
from citations.tracing import TraceSegment, trace_emit, trace_line
from citations.validation import validate_citations
from core.caller import caller_label
from core.exceptions import DomainRejected
from documents.fulltext import ANALYZER
from documents.models import ApiKey, Chunk
from documents.storable_text import unstorable_character
from retrieval.embedders import Embedder, default_embedder
from retrieval.models import VectorDatabase
from retrieval.search import HybridSearch, SearchHit

MAX_QUESTION_CHARS = 2000


class SteppedEvidence(Protocol):
    """What a stepped answer writes besides the rows every answer has."""

    def record(
        self,
        execution: QueryExecution,
        hits: list[RetrievalHit],
        sources: dict[int, QuotedSource],
        claims: list[ClaimCitation],
    ) -> list[models.Model]: ...


class QueryRejected(DomainRejected):
    """A question refused before anything is recorded; it names the ``query`` field."""

    default_param = "query"


@dataclass(frozen=True)
class _Retrieved:
    hit: SearchHit
    chunk: Chunk
    k_pos: int
    k_final: int


def question_clean(question: object) -> str:
    if not isinstance(question, str):
        raise QueryRejected("'query' must be a string", code="invalid_query")
    cleaned = question.strip()
    if not cleaned:
        raise QueryRejected("'query' must not be empty", code="empty_query")
    problem = unstorable_character(cleaned)
    if problem:  # a web form or the command line can send what JSON parsing refuses
        raise QueryRejected(
            f"'query' holds {problem}, which cannot be stored as text", code="unstorable_text"
        )
    if len(cleaned) > MAX_QUESTION_CHARS:
        raise QueryRejected(
            f"'query' is longer than {MAX_QUESTION_CHARS} characters", code="query_too_long"
        )
    return cleaned


def _index_identity(app: App) -> tuple[str, str, str]:
    """(index_hash, embed_model, analyzer) of the app's vector database(s)."""
    databases = list(
        VectorDatabase.objects.filter(data_sources__apps=app).distinct().order_by("pk")
    )
    if len(databases) == 1:
        database = databases[0]
        return database.index_hash, database.embed_model_id, database.analyzer
    combined = hashlib.sha256("|".join(d.index_hash for d in databases).encode()).hexdigest()
    first = databases[0] if databases else None
    model = first.embed_model_id if first else ""
    return combined, model, first.analyzer if first else ANALYZER


def query_execute(
    *,
    app: App,
    question: object,
    user: AbstractBaseUser | AnonymousUser | None = None,
    api_key: ApiKey | None = None,
    origin: str = "api",
    retrieval_context: str = "",
    instructions: str | None = None,
) -> QueryExecution:
    """Answer ``question`` with ``app`` and record everything the answer rests on.

    ``retrieval_context`` (earlier turns of a conversation) is added to what is
    searched for, not to the recorded question; ``instructions`` (a thread run's)
    replace the app's system prompt for a model generator.
    """
    cleaned = question_clean(question)
    started = time.perf_counter()
    # the user model is auth.User: anyone else (nobody, AnonymousUser) asks as nobody
    caller = user if isinstance(user, User) else None
    execution = QueryExecution.objects.create(
        app=app,
        organization_id=app.organization_id,
        question=cleaned,
        caller_user=caller,
        caller_api_key=api_key,
        caller=caller_label(user=caller, api_key=api_key),
        origin=origin,
    )
    try:
        _answer(execution, app, cleaned, retrieval_context, started, instructions=instructions)
    except Exception as exc:
        _fail(execution, exc)
        raise
    execution.refresh_from_db()
    return execution


def _fail(execution: QueryExecution, exc: Exception) -> None:
    """A failed answer is evidence too: record why, and chain it."""
    if not isinstance(exc, QueryAbandoned):  # the sweeper recorded why already
        query_execution_fail(execution_id=execution.pk, reason=f"{type(exc).__name__}: {exc}")


class QueryAbandoned(Exception):
    """The answer was marked failed (abandoned) while it was being made: the work
    that finished late is dropped, the recorded failure stands."""


@transaction.atomic
def query_execution_fail(
    *, execution_id: UUID, reason: str, created_before: datetime | None = None
) -> bool:
    """``running`` → ``failed`` with ``reason``, chained; False if it was no longer
    running (completed, or failed by someone else first). The conditional UPDATE is
    the claim: of an answer finishing late and the sweeper, exactly one wins."""
    running = QueryExecution.objects.filter(pk=execution_id, status=QueryStatus.RUNNING)
    if created_before is not None:
        running = running.filter(created_at__lt=created_before)
    updated = running.update(
        status=QueryStatus.FAILED, error_message=reason[:2000], completed_at=timezone.now()
    )
    if updated:
        ledger_append([QueryExecution(pk=execution_id)])
    return bool(updated)


SWEEP_BATCH = 200  # stale answers failed per sweep; the next sweep takes the rest


def query_executions_sweep_stale(*, stale_seconds: int | None = None) -> list[str]:
    """Fail the answers still ``running`` after ``stale_seconds``: whatever was making
    them died (a killed connection, a restarted database or worker) before it could
    record anything. Each is failed and chained on its own; the ids failed."""
    if stale_seconds is None:
        stale_seconds = settings.PROVENANCE_QUERY_STALE_SECONDS
    cutoff = timezone.now() - timedelta(seconds=stale_seconds)
    stale = QueryExecution.objects.filter(status=QueryStatus.RUNNING, created_at__lt=cutoff)
    reason = (
        f"abandoned: still running {stale_seconds} s after it was asked (the process or "
        "database connection answering it stopped); marked failed by the stale-answer sweeper"
    )
    return [
        str(pk)
        for pk in stale.order_by("created_at").values_list("pk", flat=True)[:SWEEP_BATCH]
        if query_execution_fail(execution_id=pk, reason=reason, created_before=cutoff)
    ]


@dataclass(frozen=True)
class Searcher:
    """One answer's retrieval: the app's index identity and the query-path embedder,
    so a stepped answer searches once per step exactly as a single answer does."""

    app: App
    embedder: Embedder
    index_hash: str
    embed_model: str
    analyzer: str

    def search(self, text: str) -> tuple[list[_Retrieved], list[float]]:
        """The hits for ``text`` above the app's threshold, and the query vector."""
        search = HybridSearch(  # its full-text side runs while the question is embedded
            organization_id=self.app.organization_id,
            data_source_ids=list(self.app.data_sources.values_list("pk", flat=True)),
            question=text,
            candidate_k=self.app.candidate_k,
            top_k=self.app.top_k,
            analyzer=self.analyzer,
        )
        vector = self.embedder.embed_query(text)
        return _retrieve(self.app, search.finish(vector)), vector

    def passages(self, retrieved: list[_Retrieved]) -> list[Passage]:
        return [
            _passage(i, r, self.index_hash, self.embed_model, self.analyzer)
            for i, r in enumerate(retrieved)
        ]

    def answer_vector(self, question: str, vector: list[float]) -> list[float]:
        return _answer_vector(self.embedder, question, vector)


def _searcher(app: App) -> Searcher:
    index_hash, embed_model, analyzer = _index_identity(app)
    embedder = default_embedder()
    if embed_model and embed_model != f"{embedder.model_id}:{embedder.pooling}":
        # analyzer parity: vectors of another model cannot be compared with these
        raise RuntimeError(
            f"the index was built with {embed_model}, the query path uses "
            f"{embedder.model_id}:{embedder.pooling}; rebuild the index"
        )
    return Searcher(app, embedder, index_hash, embed_model, analyzer)


class _IndexIdentity(TypedDict):
    """What an answer records of the index it searched."""

    index_hash: str
    embed_model: str
    analyzer: str


def _answer(
    execution: QueryExecution,
    app: App,
    question: str,
    context: str,
    started: float,
    *,
    instructions: str | None = None,
) -> None:
    searcher = _searcher(app)
    identity: _IndexIdentity = {
        "index_hash": searcher.index_hash,
        "embed_model": searcher.embed_model,
        "analyzer": searcher.analyzer,
    }
    if app.reasoning == Reasoning.STEPS:
        from citations.reasoning.stepped import stepped_answer

        stepped = stepped_answer(
            searcher=searcher, question=question, context=context, instructions=instructions
        )
        _record(
            execution,
            stepped.retrieved,
            stepped.composition,
            **identity,
            started=started,
            stepped=stepped,
        )
        return
    search_text = f"{context}\n{question}".strip() if context else question
    retrieved, vector = searcher.search(search_text)
    passages = searcher.passages(retrieved)
    generator = generator_for(app)
    generation = None
    if isinstance(generator, ModelGenerator):  # a model writes; its claims are verified
        generation = generator.answer(
            question=question, passages=passages, instructions=instructions
        )
        composition = generation_compose(generation)
    else:
        answer_vector = searcher.answer_vector(question, vector) if context else vector
        claims = generator.generate(
            question=question, question_vector=answer_vector, passages=passages
        )
        composition = compose(claims)
    _record(execution, retrieved, composition, **identity, started=started, generation=generation)


def _passage(
    index: int, r: _Retrieved, index_hash: str, embed_model: str, analyzer: str
) -> Passage:
    """A hit as a generator sees it: its text, a title naming document and section, and
    the citation payload it is recorded with (what a model must cite)."""
    payload = _payload(r, index_hash, embed_model, analyzer)
    return Passage(index, r.chunk.chunk_text, r.hit.score_norm, _title(r), payload, r.chunk.context)


def _title(r: _Retrieved) -> str:
    """A passage's title: its document, and its section when it has one."""
    return f"{r.chunk.file.name} › {r.chunk.section}" if r.chunk.section else r.chunk.file.name


def _payload(r: _Retrieved, index_hash: str, embed_model: str, analyzer: str) -> dict:
    return citation_payload(
        chunk=r.chunk,
        index_hash=index_hash,
        embed_model=embed_model,
        analyzer=analyzer,
        score_raw=r.hit.score_raw,
        score_norm=r.hit.score_norm,
        k_pos=r.k_pos,
        k_final=r.k_final,
    )


# how much the conversation counts, beside the latest question, when sentences are
# chosen for a follow-up's answer
CONTEXT_WEIGHT = 0.5


def _answer_vector(embedder: Embedder, question: str, conversation: list[float]) -> list[float]:
    """What a follow-up's sentences are compared with: the latest question, steered by
    the conversation. Retrieval uses the whole conversation ("its retention period"
    needs it), but sentences compared with it alone answer the earlier question again
    ("What about travel?" after an invoice question quoted the invoice rule)."""
    blend = np.asarray(embedder.embed_query(question)) + CONTEXT_WEIGHT * np.asarray(conversation)
    return (blend / max(float(np.linalg.norm(blend)), 1e-12)).tolist()


def _retrieve(app: App, hits: list[SearchHit]) -> list[_Retrieved]:
    """The hits above the app's score threshold, with their chunks and positions."""
    chunks = Chunk.objects.select_related("file", "file__data_source").defer("embedding")
    by_id = chunks.in_bulk([h.chunk_id for h in hits])
    kept, retrieved = 0, []
    for k_pos, hit in enumerate(hits, start=1):
        if hit.score_norm >= app.min_score:
            kept += 1
            retrieved.append(_Retrieved(hit, by_id[hit.chunk_id], k_pos, kept))
    return retrieved


@transaction.atomic
def _record(
    execution: QueryExecution,
    retrieved: list[_Retrieved],
    composition: Composition,
    *,
    index_hash: str,
    embed_model: str,
    analyzer: str,
    started: float,
    generation: Generation | None = None,
    stepped: SteppedEvidence | None = None,
) -> None:
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
            payload=_payload(r, index_hash, embed_model, analyzer),
        )
        for r in retrieved
    ]
    RetrievalHit.objects.bulk_create(hits)
    sources = _quoted_sources(execution, retrieved, hits, composition)
    segments, claims = _claims(execution, retrieved, hits, composition, sources)
    validator_status = (
        "ok"
        if all(s.lambda_state == "convergent" for s in segments)
        else next(s.lambda_state for s in segments if s.lambda_state != "convergent")
    )
    if not composition.claims:
        validator_status = "empty_citations"
    now = timezone.now()
    confidence = _confidence(execution.question, retrieved, composition)
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


def _confidence(question: str, retrieved: list[_Retrieved], composition: Composition) -> Confidence:
    """The answer's plain-language confidence, read from its first quote in its chunk."""
    passages = [
        Passage(i, r.chunk.chunk_text, r.hit.score_norm, _title(r), None, r.chunk.context)
        for i, r in enumerate(retrieved)
    ]
    claims = [composed.claim for composed in composition.claims]
    return answer_confidence(question=question, claims=claims, passages=passages)


def _quoted_sources(
    execution: QueryExecution,
    retrieved: list[_Retrieved],
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
    retrieved: list[_Retrieved],
    hits: list[RetrievalHit],
    composition: Composition,
    sources: dict[int, QuotedSource],
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
            read_analyzer=hit.payload["analyzer"],
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
    retrieved: list[_Retrieved],
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


def query_validate(*, execution: QueryExecution) -> dict:
    """Re-run the validator on a stored answer against the live index."""
    live = {d.pk: d for d in VectorDatabase.objects.filter(data_sources__apps=execution.app)}
    results = []
    for claim in execution.claim_citations.select_related(
        "quoted_source__hit", "quoted_source__chunk__file"
    ):
        hit = claim.quoted_source.hit
        chunk = claim.quoted_source.chunk
        database = live.get(chunk.vector_database_id)
        code = validate_citations(
            [hit.payload],
            live_index_hash=database.index_hash if database else None,
            read_analyzer=database.analyzer if database else None,
            live_embed_model=database.embed_model_id if database else None,
            revisions={str(chunk.pk): revision_label(chunk.file.revision, chunk.file.sha256)},
            spans={str(chunk.pk): (chunk.char_start, chunk.char_end)},
        )
        results.append({"segment": claim.segment, "result": code, "snippet_id": str(chunk.pk)})
    status = next((r["result"] for r in results if r["result"] != "ok"), "ok")
    if not results:
        status = "empty_citations"
    quoted_as = list(execution.quoted_sources.values_list("quoted_as", flat=True))
    if not markers_match(execution.answer, quoted_as):
        status = "marker_mismatch"
    return {"query_id": str(execution.pk), "result": status, "segments": results}
