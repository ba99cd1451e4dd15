"""Answering a question: retrieve, generate, compose, and record the evidence.

The QueryExecution row is written before the work (status ``running``) and
completed afterwards; all evidence rows of one answer are written in one
transaction, with snapshots of what they cite.
"""

from __future__ import annotations

import time
from typing import TypedDict

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser, User

from citations.models import App, QueryExecution, Reasoning
from citations.services.abandoning import QueryAbandoned, query_execution_fail
from citations.services.evidence import evidence_record
from citations.services.questions import question_clean
from citations.services.searching import searcher_for
from citations.services.writing import answer_write
from core.caller import caller_label
from core.user_agents import user_agent_clean
from documents.models import ApiKey


def query_execute(
    *,
    app: App,
    question: object,
    user: AbstractBaseUser | AnonymousUser | None = None,
    api_key: ApiKey | None = None,
    origin: str = "api",
    caller_address: str | None = None,
    user_agent: str | None = None,
    retrieval_context: str = "",
    instructions: str | None = None,
    base_url: str | None = None,
) -> QueryExecution:
    """Answer ``question`` with ``app`` and record everything the answer rests on.

    ``origin`` is the surface asked through (api, web, thread, cli, …);
    ``caller_address`` and ``user_agent`` are where the request came from (a
    command: no address, its own name as the agent).

    ``retrieval_context`` (earlier turns of a conversation) is added to what is
    searched for, not to the recorded question; ``instructions`` (a thread run's)
    replace the app's system prompt for a model generator.

    ``base_url`` is the origin the citation payloads' ``source_url`` are absolute on:
    the request's (``request.build_absolute_uri("/")``); without a request (a task, a
    command) the configured ``PROVENANCE_PUBLIC_URL``.
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
        caller_address=caller_address or None,
        caller_user_agent=user_agent_clean(user_agent),
    )
    try:
        _answer(
            execution,
            app,
            cleaned,
            retrieval_context,
            started,
            instructions=instructions,
            base_url=base_url,
        )
    except Exception as exc:
        _fail(execution, exc)
        raise
    execution.refresh_from_db()
    return execution


def _fail(execution: QueryExecution, exc: Exception) -> None:
    """A failed answer is evidence too: record why, and chain it."""
    if not isinstance(exc, QueryAbandoned):  # the sweeper recorded why already
        query_execution_fail(execution_id=execution.pk, reason=f"{type(exc).__name__}: {exc}")


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
    base_url: str | None = None,
) -> None:
    searcher = searcher_for(app, base_url=base_url)
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
        evidence_record(
            execution,
            stepped.retrieved,
            stepped.composition,
            **identity,
            payload_of=searcher.payload,
            started=started,
            stepped=stepped,
            written_by=stepped.written_by(),
        )
        return
    search_text = f"{context}\n{question}".strip() if context else question
    retrieved, vector = searcher.search(search_text)
    written = answer_write(
        app=app,
        question=question,
        passages=searcher.passages(retrieved),
        question_vector=lambda: searcher.answer_vector(question, vector) if context else vector,
        instructions=instructions,
    )
    evidence_record(
        execution,
        retrieved,
        written.composition,
        **identity,
        payload_of=searcher.payload,
        started=started,
        generation=written.generation,
        written_by=(written.generator, written.fallback_reason),
        rerank=written.rerank,
        probability=written.probability,
    )
