"""Running an evaluation: record the run, ask every planned question through the
real answer path, append one item per answer, then the outcome with the figures.

Every row is appended and chained, never updated. The work is resumable: a run is
advanced in slices (one Celery task each, or one loop on the command line), each
slice asking the questions not recorded yet, under a session advisory lock so two
workers never ask the same run's questions at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from enum import Enum
from typing import NotRequired, TypedDict, Unpack
from uuid import UUID

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import User
from django.db import DatabaseError, connection, transaction

from audit.ledger import ledger_append
from citations.models import App, QueryExecution, QuotedSource, RagTrace, RetrievalHit
from citations.services.execution import query_execute
from citations.services.revalidation import query_validate
from core.caller import caller_label
from evaluation.goldsets import MAX_PARAPHRASES, GoldItem, GoldSet, goldset_unknown_documents
from evaluation.models import (
    EvaluationItem,
    EvaluationOutcome,
    EvaluationRun,
    RunStatus,
    Verdict,
)
from evaluation.scoring import Snippet, chunk_sections, figures_compute, judge

MAX_SEEDS = 5
EVALUATION_LOCK = 0x4556414C  # "EVAL": the class of the per-run advisory locks
SLICE_SECONDS = 120.0  # one task's share of a run; the next task takes the rest
APP_SETTINGS = (
    "generator",
    "model",
    "top_k",
    "candidate_k",
    "min_score",
    "answer_threshold",
    "max_answer_sentences",
    "temperature",
    "max_output_tokens",
)


class EvaluationError(Exception):
    """An evaluation cannot be started as asked; the message says why."""


@dataclass(frozen=True)
class Planned:
    """One question to ask: a gold item's question or paraphrase, for one seed."""

    position: int
    seed: int
    variant: int
    item: GoldItem

    @property
    def question(self) -> str:
        return self.item.variants[self.variant]


class Advance(Enum):
    FINISHED = "finished"
    MORE = "more"  # the slice's time is up; questions remain
    BUSY = "busy"  # another process is advancing this run
    GONE = "gone"


def app_settings_snapshot(app: App) -> dict:
    data_sources = sorted(app.data_sources.values_list("name", flat=True))
    return {"name": app.name, "data_sources": data_sources} | {
        name: getattr(app, name) for name in APP_SETTINGS
    }


def user_label(user: AbstractBaseUser | None) -> str:
    """Who started a run: the caller's label, "command line" when nobody signed in did."""
    return caller_label(user=user, api_key=None, nobody="command line")


@transaction.atomic
def evaluation_run_create(
    *,
    app: App,
    gold: GoldSet,
    seeds: int = 1,
    limit: int | None = None,
    paraphrases: int | None = None,
    user: User | None = None,
    origin: str = "command",
) -> EvaluationRun:
    """Record (and chain) the run before any question is asked: the first ``limit``
    items, each with its first ``paraphrases`` paraphrases (None: all of them), as
    asked."""
    if not 1 <= seeds <= MAX_SEEDS:
        raise EvaluationError(f"--seeds must be between 1 and {MAX_SEEDS}")
    if limit is not None and limit < 1:
        raise EvaluationError("--limit must be at least 1")
    if paraphrases is not None and not 0 <= paraphrases <= MAX_PARAPHRASES:
        raise EvaluationError(f"--paraphrases must be between 0 and {MAX_PARAPHRASES}")
    items = gold.items[:limit] if limit else gold.items
    if paraphrases is not None:
        items = tuple(replace(i, paraphrases=i.paraphrases[:paraphrases]) for i in items)
    kept = GoldSet(name=gold.name, sha256=gold.sha256, items=items)
    run = EvaluationRun.objects.create(
        organization_id=app.organization_id,
        app=app,
        gold_name=gold.name,
        gold_sha256=gold.sha256,
        gold_items=[item.as_json() for item in items],
        warnings=goldset_unknown_documents(app=app, gold=kept),
        app_settings=app_settings_snapshot(app),
        seeds=seeds,
        total=seeds * sum(len(item.variants) for item in items),
        started_by=user,
        started_by_label=user_label(user),
        origin=origin,
    )
    ledger_append([run])
    return run


class RunRequest(TypedDict):
    """What ``evaluation_run_create`` takes, for the callers that pass it on."""

    app: App
    gold: GoldSet
    seeds: NotRequired[int]
    limit: NotRequired[int | None]
    paraphrases: NotRequired[int | None]
    user: NotRequired[User | None]
    origin: NotRequired[str]


def evaluation_run_start(**request: Unpack[RunRequest]) -> EvaluationRun:
    """Record the run and queue it on the worker once the record is committed."""
    from evaluation.tasks import evaluation_run_advance_task

    with transaction.atomic():
        run = evaluation_run_create(**request)
        run_id = str(run.pk)
        transaction.on_commit(lambda: evaluation_run_advance_task.delay(run_id))
    return run


def run_plan(run: EvaluationRun) -> list[Planned]:
    """Every question of the run in order: seed by seed, item by item, question first."""
    items = [GoldItem.from_json(data) for data in run.gold_items]
    planned: list[Planned] = []
    for seed in range(1, run.seeds + 1):
        for item in items:
            for variant in range(len(item.variants)):
                planned.append(Planned(len(planned) + 1, seed, variant, item))
    return planned


def run_status(run: EvaluationRun) -> str:
    outcome = EvaluationOutcome.objects.filter(run=run).values_list("status", flat=True).first()
    if outcome:
        return outcome
    return RunStatus.RUNNING if run.items.exists() else RunStatus.QUEUED


@contextmanager
def _run_claimed(run_id: UUID | str) -> Iterator[bool]:
    """A session advisory lock on the run: held while this process asks its questions,
    released when it stops (or its connection dies with it)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_try_advisory_lock(%s, hashtext(%s))", [EVALUATION_LOCK, str(run_id)]
        )
        claimed = bool(cursor.fetchone()[0])
    try:
        yield claimed
    finally:
        if claimed:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_advisory_unlock(%s, hashtext(%s))", [EVALUATION_LOCK, str(run_id)]
                )


def evaluation_run_advance(
    *,
    run_id: UUID | str,
    seconds: float | None = SLICE_SECONDS,
    on_item: Callable[[EvaluationItem, int], None] | None = None,
) -> Advance:
    """Ask the run's questions not recorded yet, for up to ``seconds`` (None: all),
    then record the outcome when none remain."""
    run = EvaluationRun.objects.select_related("app").filter(pk=run_id).first()
    if run is None:
        return Advance.GONE
    with _run_claimed(run.pk) as claimed:
        if not claimed:
            return Advance.BUSY
        if EvaluationOutcome.objects.filter(run=run).exists():
            return Advance.FINISHED
        try:
            return _advance(run, seconds, on_item)
        except DatabaseError:
            raise  # transient (the task retries); the items so far stand
        except Exception as exc:
            evaluation_run_fail(run=run, reason=f"{type(exc).__name__}: {exc}")
            raise


def _advance(
    run: EvaluationRun,
    seconds: float | None,
    on_item: Callable[[EvaluationItem, int], None] | None,
) -> Advance:
    started = time.monotonic()
    done = set(run.items.values_list("position", flat=True))
    unmatched_lines = {_warning_line(w) for w in run.warnings}
    for planned in run_plan(run):
        if planned.position in done:
            continue
        if seconds is not None and time.monotonic() - started > seconds:
            return Advance.MORE
        item = _ask(run, planned, planned.item.line in unmatched_lines)
        done.add(planned.position)
        if on_item is not None:
            on_item(item, len(done))
    _finish(run)
    return Advance.FINISHED


def _warning_line(warning: str) -> int:
    return int(warning.split(":", 1)[0].removeprefix("line "))


def _ask(run: EvaluationRun, planned: Planned, unmatched: bool) -> EvaluationItem:
    fields: dict = {"verdict": Verdict.FAILED}
    try:
        execution = query_execute(
            app=run.app, question=planned.question, user=_starter(run), origin="evaluation"
        )
    except DatabaseError:
        raise
    except Exception as exc:  # the failed answer is recorded by the answer path itself
        fields["error_message"] = f"{type(exc).__name__}: {exc}"[:2000]
    else:
        fields = _read_evidence(execution, planned.item, unmatched)
    return _item_append(run, planned, fields)


def _starter(run: EvaluationRun) -> User | None:
    """The user who started the run (recorded as the caller of its answers), if any."""
    from django.contrib.auth import get_user_model

    if run.started_by_id is None:
        return None
    return get_user_model().objects.filter(pk=run.started_by_id).first()


@transaction.atomic
def _item_append(run: EvaluationRun, planned: Planned, fields: dict) -> EvaluationItem:
    item = EvaluationItem.objects.create(
        run=run,
        organization_id=run.organization_id,
        position=planned.position,
        line=planned.item.line,
        seed=planned.seed,
        variant=planned.variant,
        question=planned.question,
        expected=planned.item.expected,
        answerable=planned.item.answerable,
        **fields,
    )
    ledger_append([item])
    return item


def _read_evidence(execution: QueryExecution, gold: GoldItem, unmatched: bool) -> dict:
    """The item's fields, read back from what the answer path stored."""
    hits = list(
        RetrievalHit.objects.filter(query=execution)
        .select_related("file", "chunk")
        .only("k_pos", "section", "chunk_id", "file__name", "chunk__chunk_text")
        .order_by("k_pos")
    )
    quoted = list(QuotedSource.objects.filter(query=execution).order_by("id"))
    sections = chunk_sections([h.chunk_id for h in hits] + [q.chunk_id for q in quoted])
    judgement = judge(
        expected=gold.expected,
        answerable=gold.answerable,
        unmatched=unmatched,
        answer=execution.answer,
        hits=[
            _snippet(h.chunk_id, h.file.name, h.section, h.chunk.chunk_text, sections) for h in hits
        ],
        cited=[
            (q.quoted_as, _snippet(q.chunk_id, q.document_name, q.section, q.chunk_text, sections))
            for q in sorted(quoted, key=lambda q: int(q.quoted_as))
        ],
    )
    question_trace = RagTrace.objects.filter(query=execution, seg=0).first()
    return {
        "query": execution,
        "answer": execution.answer,
        "cited": judgement.cited,
        "hit_ids": judgement.hit_ids,
        "first_correct_rank": judgement.first_correct_rank,
        "matched_citations": judgement.matched_citations,
        "source_coverage": judgement.source_coverage,
        "answer_coverage": judgement.answer_coverage,
        "delta_s": question_trace.deltaS if question_trace else None,
        "validator_status": query_validate(execution=execution)["result"],
        "latency_ms": execution.latency_ms,
        "verdict": judgement.verdict,
    }


def _snippet(chunk_id: object, document: str, section: str, text: str, sections: dict) -> Snippet:
    touched = sections.get(str(chunk_id), set()) - {section}
    return Snippet(str(chunk_id), document, (section, *sorted(touched)), text)


@transaction.atomic
def _finish(run: EvaluationRun) -> EvaluationOutcome:
    items = list(run.items.select_related("query").order_by("position"))
    outcome = EvaluationOutcome.objects.create(
        run=run,
        organization_id=run.organization_id,
        status=RunStatus.COMPLETED,
        figures=figures_compute(items, seeds=run.seeds),
    )
    ledger_append([outcome])
    return outcome


@transaction.atomic
def evaluation_run_fail(*, run: EvaluationRun, reason: str) -> EvaluationOutcome | None:
    """End a run that cannot go on; its items so far stay. None if it had ended."""
    if EvaluationOutcome.objects.filter(run=run).exists():
        return None
    items = list(run.items.select_related("query").order_by("position"))
    outcome = EvaluationOutcome.objects.create(
        run=run,
        organization_id=run.organization_id,
        status=RunStatus.FAILED,
        figures=figures_compute(items, seeds=run.seeds),
        error_message=reason[:2000],
    )
    ledger_append([outcome])
    return outcome
