"""Stepped answers with the extractive generator, on real documents: a question
joining facts of two documents is answered in steps, each with its own retrieval
and [n]; the final answer is numbered over every step in order of first use; every
step's citations validate, and the evidence is append-only and chained."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.db.utils import DatabaseError
from pytest_django import Settings

from audit.ledger import ledger_verify
from audit.models import EvidenceEntry
from citations.markers import markers_in, markers_match
from citations.models import (
    QueryExecution,
    QuotedSource,
    ReasoningStep,
    RetrievalHit,
    StepClaim,
    StepSourceAttribution,
)
from citations.reasoning.selectors import reasoning_of
from citations.services import query_execute
from citations.services.revalidation import query_validate
from citations.validation import validate_citations
from tests.citations import steps_support
from tests.citations.steps_support import LEAVE_FACT, ONE_FACT, PASSWORD_FACT, TWO_FACTS

steps_library = steps_support.steps_library


def _steps(execution: QueryExecution) -> list[ReasoningStep]:
    return list(ReasoningStep.objects.filter(query=execution).order_by("step_number"))


def assert_step_invariants(execution: QueryExecution) -> None:
    """DESIGN invariants 5, 6 and 9 for each step's own answer and for the final one."""
    final = list(QuotedSource.objects.filter(query=execution))
    assert markers_match(execution.answer, [s.quoted_as for s in final])
    for claim in execution.claim_citations.select_related("quoted_source"):
        assert execution.answer[claim.reply_start : claim.reply_end] == claim.reply_sentence
        text = claim.quoted_source.chunk_text
        assert text[claim.source_start : claim.source_end] == claim.source_sentence
    for step in _steps(execution):
        attributions = list(step.source_attributions.select_related("hit", "chunk"))
        assert markers_match(step.intermediate_answer, [a.quoted_as for a in attributions])
        for a in attributions:
            hit = a.hit
            assert hit.query_id == execution.pk
            assert step.hits_from is not None and step.hits_to is not None
            assert step.hits_from <= hit.k_pos <= step.hits_to  # the step's own retrieval
            assert a.retrieval_rank == hit.k_pos - step.hits_from + 1
            assert a.final_source is not None
            assert a.chunk_id == hit.chunk_id and a.final_source.chunk_id == a.chunk_id
            assert a.document_id == str(a.chunk.file.document_id)
            assert a.chunk_index == a.chunk.position and len(a.excerpt) <= 200
            assert a.relevance_score == pytest.approx(
                a.score_norm * step.confidence_score, abs=1e-6
            )
            assert validate_citations([hit.payload], read_analyzer=hit.payload["analyzer"]) == "ok"
        for cited in StepClaim.objects.filter(step=step).select_related("attribution__chunk"):
            answer = step.intermediate_answer
            assert answer[cited.reply_start : cited.reply_end] == cited.reply_sentence
            text = cited.attribution.chunk.chunk_text
            assert text[cited.source_start : cited.source_end] == cited.source_sentence
            assert cited.claim is not None
            assert cited.claim.reply_sentence == cited.reply_sentence  # the same in the final
            assert cited.claim.quoted_source == cited.attribution.final_source
    assert query_validate(execution=execution)["result"] == "ok"


def test_two_facts_of_two_documents_are_two_steps_with_their_own_sources(
    steps_library: steps_support.StepsLibrary,
) -> None:
    app = steps_library.app()

    execution = query_execute(app=app, question=TWO_FACTS)

    assert execution.status == "completed", execution.error_message
    steps = _steps(execution)
    assert [s.question for s in steps] == [
        "How many days of annual leave do full-time employees receive?",
        "How often must passwords be changed?",
    ]
    assert [s.outcome for s in steps] == ["answered", "answered"]
    assert LEAVE_FACT in steps[0].intermediate_answer
    assert PASSWORD_FACT in steps[1].intermediate_answer
    cited = [{a.file_id for a in s.source_attributions.all()} for s in steps]
    assert steps_library.leave.pk in cited[0] and steps_library.security.pk in cited[1]
    for step in steps:
        assert step.reasoning_trace.startswith(("2 step(s)", "Step 2"))
        assert 0 < step.confidence_score <= 1 and step.execution_time > 0
        assert step.intermediate_answer.endswith("[1]")  # each step numbers its own sources
        assert step.proposed_by == "question" and step.hits_from is not None
    assert steps[0].hits_to is not None and steps[1].hits_from is not None
    assert steps[0].hits_to < steps[1].hits_from  # separate retrievals, never colliding
    # the final answer: both facts, numbered over the steps in order of first use
    assert execution.answer == f"{LEAVE_FACT} [1] {PASSWORD_FACT} [2]"
    assert_step_invariants(execution)

    summary = reasoning_of(execution=execution).summary
    usage = summary.source_usage_by_step
    assert usage == {
        1: [str(steps_library.leave.document_id)],
        2: [str(steps_library.security.document_id)],
    }
    assert {s.document_title for s in summary.all_sources} == {
        "leave-policy.md",
        "security-policy.md",
    }
    assert len(summary.primary_sources) <= 3


def test_cot_with_source_attribution(steps_library: steps_support.StepsLibrary) -> None:
    """The document's integration test, adapted: a chain of thought over our pipeline."""
    result = reasoning_of(execution=query_execute(app=steps_library.app(), question=TWO_FACTS))

    assert result.summary is not None
    assert len(result.summary.all_sources) > 0
    assert len(result.summary.primary_sources) <= 3
    for step in result.schemas:
        assert len(step.source_attributions) > 0


def test_a_one_fact_question_stays_one_step(steps_library: steps_support.StepsLibrary) -> None:
    execution = query_execute(app=steps_library.app(), question=ONE_FACT)

    (step,) = _steps(execution)
    assert step.question == ONE_FACT and step.outcome == "answered"
    assert execution.answer == f"{PASSWORD_FACT} [1]"
    assert step.intermediate_answer == execution.answer
    assert_step_invariants(execution)


def test_a_chunk_two_steps_cite_is_one_number_in_the_final_answer(
    steps_library: steps_support.StepsLibrary,
) -> None:
    execution = query_execute(
        app=steps_library.app(),
        question="How often must passwords be changed and how many characters must passwords "
        "contain?",
    )

    steps = _steps(execution)
    assert len(steps) == 2
    chunks = [{a.chunk_id for a in s.source_attributions.all()} for s in steps]
    assert chunks[0] & chunks[1]  # both steps cite the passwords chunk
    finals = {a.final_source_id for a in StepSourceAttribution.objects.filter(query=execution)}
    assert len(finals) == QuotedSource.objects.filter(query=execution).count()
    assert_step_invariants(execution)


def test_a_step_nothing_answers_says_so_and_the_final_answer_cites_nothing_for_it(
    steps_library: steps_support.StepsLibrary,
) -> None:
    execution = query_execute(
        app=steps_library.app(),
        question="How often must passwords be changed? What is the launch code of the rocket?",
    )

    answered, unanswered = _steps(execution)
    assert answered.outcome == "answered"
    assert unanswered.outcome == "unanswered" and not unanswered.source_attributions.exists()
    assert "final answer cites nothing for it" in unanswered.reasoning_trace
    assert unanswered.confidence_score == 0
    assert execution.answer == f"{PASSWORD_FACT} [1]"
    assert_step_invariants(execution)


def test_a_step_whose_retrieval_finds_nothing(steps_library: steps_support.StepsLibrary) -> None:
    app = steps_library.app(min_score=0.99)  # every hit is below the app's threshold

    execution = query_execute(app=app, question=TWO_FACTS)

    steps = _steps(execution)
    assert [s.outcome for s in steps] == ["no_hits", "no_hits"]
    assert all(s.hits_from is None and "Nothing was retrieved" in s.reasoning_trace for s in steps)
    assert not RetrievalHit.objects.filter(query=execution).exists()
    assert markers_in(execution.answer) == [] and execution.validator_status == "empty_citations"


def test_a_follow_up_step_searches_with_the_previous_answer(
    steps_library: steps_support.StepsLibrary,
) -> None:
    execution = query_execute(
        app=steps_library.app(),
        question="Who must approve annual leave requests and when must they be approved?",
    )

    first, second = _steps(execution)
    assert second.uses_steps == [1]
    assert "line manager" in first.intermediate_answer
    plain_first = first.intermediate_answer.replace(" [1]", "")
    assert plain_first in second.search_text and second.search_text.endswith(second.question)
    assert "with the answer of step(s) 1" in second.reasoning_trace


def test_the_steps_are_capped_and_the_trace_says_so(
    steps_library: steps_support.StepsLibrary, settings: Settings
) -> None:
    settings.PROVENANCE_REASONING_MAX_STEPS = 2

    execution = query_execute(
        app=steps_library.app(),
        question="What are the rules for passwords, visitor badges and train travel?",
    )

    steps = _steps(execution)
    assert len(steps) == 2
    assert "capped at 2 steps" in steps[0].reasoning_trace
    assert "train travel" in steps[0].reasoning_trace


def test_a_single_step_app_writes_no_steps(steps_library: steps_support.StepsLibrary) -> None:
    app = steps_library.app(reasoning="single", name="single")

    execution = query_execute(app=app, question=TWO_FACTS)

    assert execution.status == "completed"
    assert not ReasoningStep.objects.filter(query=execution).exists()
    assert not reasoning_of(execution=execution).stepped


def test_the_steps_are_chained_and_the_chain_verifies(
    steps_library: steps_support.StepsLibrary,
) -> None:
    execution = query_execute(app=steps_library.app(), question=TWO_FACTS)

    chained = set(
        EvidenceEntry.objects.filter(
            record_table__in=[
                "citations_reasoningstep",
                "citations_stepsourceattribution",
                "citations_stepclaim",
            ]
        ).values_list("record_table", "record_id")
    )
    rows = [
        *ReasoningStep.objects.filter(query=execution),
        *StepSourceAttribution.objects.filter(query=execution),
        *StepClaim.objects.filter(query=execution),
    ]
    assert len(rows) >= 6
    assert {(r._meta.db_table, str(r.pk)) for r in rows} <= chained
    # integer ids repeat across tables: an entry is its table and its id together
    ours = {(r._meta.db_table, str(r.pk)) for r in rows}
    entries = [
        e
        for e in EvidenceEntry.objects.filter(record_id__in=[str(r.pk) for r in rows])
        if (e.record_table, e.record_id) in ours
    ]
    assert len(entries) == len(ours)
    assert {e.organization_id for e in entries} == {execution.organization_id}
    assert ledger_verify().ok


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE citations_reasoningstep SET intermediate_answer = 'forged'",
        "DELETE FROM citations_reasoningstep",
        "UPDATE citations_stepsourceattribution SET relevance_score = 1",
        "DELETE FROM citations_stepclaim",
        "TRUNCATE citations_stepsourceattribution CASCADE",
    ],
)
def test_the_steps_are_append_only(
    steps_library: steps_support.StepsLibrary, statement: str
) -> None:
    query_execute(app=steps_library.app(), question=TWO_FACTS)

    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred FK checks pending
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(statement)
