"""Evidence cannot be changed or deleted through the ORM or by SQL of the
application's role, and it survives the deletion of users and documents."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import DatabaseError, connection, transaction
from django.db.models import ProtectedError

from audit.ledger import ledger_verify
from citations.models import ClaimCitation, QueryExecution, QuotedSource, RagTrace, RetrievalHit
from citations.services import query_execute
from documents.ingestion import file_delete
from tests.audit.conftest import Trail

pytestmark = pytest.mark.django_db

TABLES = [
    "citations_queryexecution",
    "citations_retrievalhit",
    "citations_quotedsource",
    "citations_claimcitation",
    "rag_traces",
    "audit_evidenceentry",
    "audit_documentevent",
]


@pytest.fixture
def answer(trail: Trail) -> QueryExecution:
    return query_execute(app=trail.acme_app, question="How long are invoices kept?")


@pytest.mark.parametrize("table", TABLES)
def test_sql_update_and_delete_are_refused_by_the_database(
    answer: QueryExecution, table: str
) -> None:
    pk = "seq" if table == "audit_evidenceentry" else "id"
    for statement in (f"UPDATE {table} SET {pk} = {pk}", f"DELETE FROM {table}"):
        with (
            pytest.raises(DatabaseError, match="append-only"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(statement)


def test_orm_changes_are_refused(answer: QueryExecution) -> None:
    source = QuotedSource.objects.filter(query=answer).first()
    assert source is not None
    for action in (
        lambda: QueryExecution.objects.filter(pk=answer.pk).update(answer="rewritten"),
        lambda: QuotedSource.objects.filter(pk=source.pk).update(chunk_text="forged"),
        lambda: RetrievalHit.objects.filter(query=answer).update(score_raw=0),
        lambda: ClaimCitation.objects.filter(query=answer).update(reply_sentence="x"),
        lambda: RagTrace.objects.filter(query=answer).delete(),
    ):
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
            action()
    answer.refresh_from_db()
    assert "seven years" in answer.answer


def test_deleting_a_user_keeps_the_evidence_and_who_asked(trail: Trail) -> None:
    user = get_user_model().objects.create_user("alice", password="pw-alice-123")
    execution = query_execute(app=trail.acme_app, question="How many days of leave?", user=user)
    user.delete()
    execution.refresh_from_db()
    assert execution.caller == "user:alice" and "twenty-five" in execution.answer
    assert ledger_verify().ok


def test_deleting_a_document_hides_it_but_keeps_bytes_chunks_and_answers(trail: Trail) -> None:
    execution = query_execute(app=trail.acme_app, question="Are trains preferred over flights?")
    cited = QuotedSource.objects.filter(query=execution).first()
    assert cited is not None
    file_delete(file=trail.handbook, reason="superseded by the 2027 handbook", origin="10.0.0.7")
    try:
        after = query_execute(app=trail.acme_app, question="Are trains preferred over flights?")
        assert not after.quoted_sources.exists()
        cited.refresh_from_db()
        assert "Trains are preferred" in cited.chunk_text
        assert cited.chunk.chunk_text == cited.chunk_text
        event = trail.handbook.events.get(kind="deletion")
        assert (event.reason, event.origin, event.actor) == (
            "superseded by the 2027 handbook",
            "10.0.0.7",
            "system",
        )
        assert ledger_verify().ok
    finally:  # the package's other tests need the handbook retrievable
        from documents.models import Chunk, File
        from tests.support.tamper import triggers_off

        with triggers_off():  # a deletion is never taken back but by the owner
            File.objects.filter(pk=trail.handbook.pk).update(deleted_at=None, deletion_reason="")
        Chunk.objects.filter(file=trail.handbook, markdown__is_active=True).update(
            is_retrievable=True
        )


def test_deleting_an_organization_with_evidence_is_refused(
    trail: Trail, answer: QueryExecution
) -> None:
    with pytest.raises(ProtectedError), transaction.atomic():
        trail.acme.delete()
    assert QueryExecution.objects.filter(pk=answer.pk).exists()
