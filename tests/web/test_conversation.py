"""Follow-ups in the same thread, the answer streamed as server-sent events,
readers' feedback as chained evidence, and the PDF highlight crop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from django.db import DatabaseError, transaction
from django.test import Client

from audit.ledger import ledger_verify
from audit.models import EvidenceEntry
from citations.models import AnswerFeedback, Message, MessageRole, QueryExecution
from citations.services import query_execute
from citations.web import conversation
from documents.models import File
from tests import factories
from tests.support.http import streamed
from tests.web.conftest import Tenant, ingest_now, member_of, signed_in
from tests.web.test_viewer import PDF, PDF_QUESTION

if TYPE_CHECKING:
    from django.test.client import _MonkeyPatchedWSGIResponse


pytestmark = pytest.mark.django_db

QUESTION = "How many days per week can employees work remotely?"
FOLLOW_UP = "Who approves the schedule?"


def _ask(tenant: Tenant, question: str = QUESTION) -> QueryExecution:
    response = tenant.client.post("/", {"app": str(tenant.app.pk), "question": question})
    assert response.status_code == 303, response.content
    return QueryExecution.objects.get(pk=response["Location"].split("/")[2])


def _events(response: _MonkeyPatchedWSGIResponse) -> list[tuple[str, dict]]:
    body = streamed(response).decode()
    events = []
    for block in body.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def test_it_streams_the_status_then_the_answer_sentence_by_sentence(
    tenant: Tenant, remote_work: File
) -> None:
    response = tenant.client.post("/ask/stream/", {"app": str(tenant.app.pk), "question": QUESTION})
    assert response["Content-Type"] == "text/event-stream" and response.streaming
    events = _events(response)
    names = [name for name, _ in events]
    assert names[0] == "status" and events[0][1]["text"] == "Searching the documents…"
    assert names[1] == "status" and events[1][1]["text"] == "Writing the answer…"
    assert names[-1] == "done" and set(names[2:-1]) == {"sentence"}
    assert "two days per week" in events[2][1]["html"] and 'class="ref"' in events[2][1]["html"]
    execution = QueryExecution.objects.get(pk=events[-1][1]["query_id"])
    assert execution.origin == "web" and execution.caller_user == tenant.user
    assert events[-1][1]["url"] == f"/answers/{execution.pk}/"


def test_a_streamed_empty_question_reports_why(tenant: Tenant) -> None:
    events = _events(tenant.client.post("/ask/stream/", {"app": str(tenant.app.pk)}))
    assert [name for name, _ in events] == ["status", "failed"]
    assert "question" in events[1][1]["text"].lower()


def test_a_follow_up_continues_the_thread_with_the_earlier_turns(
    tenant: Tenant, remote_work: File, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _ask(tenant)
    searched_with = []

    def spy(**kwargs: Any) -> QueryExecution:
        searched_with.append(kwargs["retrieval_context"])
        return query_execute(**kwargs)

    monkeypatch.setattr(conversation, "query_execute", spy)
    response = tenant.client.post(f"/answers/{first.pk}/follow-up/", {"question": FOLLOW_UP})
    assert response.status_code == 303
    second = QueryExecution.objects.get(pk=response["Location"].split("/")[2])
    messages = list(Message.objects.filter(query__in=[first, second]).order_by("created_at"))
    assert len({m.thread_id for m in messages}) == 1, "both answers are in one thread"
    thread = messages[0].thread
    turns = list(thread.messages.order_by("created_at").values_list("role", "content"))
    assert [role for role, _ in turns] == ["user", "assistant", "user", "assistant"]
    assert turns[0][1] == QUESTION and turns[2][1] == FOLLOW_UP
    # searched with the earlier question (the threads API's retrieval context)
    assert QUESTION in searched_with[0]
    page = tenant.client.get(f"/answers/{second.pk}/").content.decode()
    assert "Earlier in this conversation" in page and QUESTION in page
    # a third turn through the stream continues the same thread
    events = _events(
        tenant.client.post(
            "/ask/stream/", {"follow_up": str(second.pk), "question": "Is equipment provided?"}
        )
    )
    third = QueryExecution.objects.get(pk=events[-1][1]["query_id"])
    assert Message.objects.get(query=third, role=MessageRole.ASSISTANT).thread_id == thread.pk


def test_a_follow_up_on_someone_elses_answer_is_404(tenant: Tenant, remote_work: File) -> None:
    first = _ask(tenant)
    mallory = signed_in(member_of(tenant.org, "mallory"))
    assert mallory.post(f"/answers/{first.pk}/follow-up/", {"question": "x y"}).status_code == 404
    stream = mallory.post("/ask/stream/", {"follow_up": str(first.pk), "question": "x y"})
    assert stream.status_code == 404


def test_feedback_is_recorded_in_the_chain_and_cannot_be_changed(
    tenant: Tenant, remote_work: File
) -> None:
    execution = _ask(tenant)
    response = tenant.client.post(
        f"/answers/{execution.pk}/feedback/", {"rating": "not_helpful", "comment": "Too short."}
    )
    assert response.status_code == 302 and response["Location"].endswith("#feedback")
    feedback = AnswerFeedback.objects.get(query=execution)
    assert (feedback.rating, feedback.comment, feedback.caller) == (
        "not_helpful",
        "Too short.",
        "alice",
    )
    assert feedback.organization_id == tenant.org.pk
    entry = EvidenceEntry.objects.get(record_table="citations_answerfeedback")
    assert entry.record_id == str(feedback.pk) and entry.organization_id == tenant.org.pk
    assert ledger_verify().ok
    page = tenant.client.get(f"/answers/{execution.pk}/").content.decode()
    assert "You said: not helpful" in page
    for change in (
        lambda: AnswerFeedback.objects.filter(pk=feedback.pk).update(comment="edited"),
        lambda: AnswerFeedback.objects.filter(pk=feedback.pk).delete(),
    ):
        with pytest.raises(DatabaseError), transaction.atomic():
            change()
    bad = tenant.client.post(f"/answers/{execution.pk}/feedback/", {"rating": "meh"})
    assert bad.status_code == 302 and AnswerFeedback.objects.count() == 1


def test_officers_see_feedback_read_only(
    tenant: Tenant, remote_work: File, admin_client: Client
) -> None:
    execution = _ask(tenant)
    tenant.client.post(f"/answers/{execution.pk}/feedback/", {"rating": "helpful"})
    feedback = AnswerFeedback.objects.get()
    listing = admin_client.get("/admin/citations/answerfeedback/")
    assert listing.status_code == 200 and "Helpful" in listing.content.decode()
    assert admin_client.get("/admin/citations/answerfeedback/add/").status_code == 403
    change = admin_client.get(f"/admin/citations/answerfeedback/{feedback.pk}/change/")
    assert change.status_code == 200 and 'name="comment"' not in change.content.decode()


def test_the_crop_shows_the_highlighted_band_of_a_pdf_page(tenant: Tenant, corpus: Path) -> None:
    path = corpus / PDF
    ingest_now(factories.upload(tenant.source, path.name, path.read_bytes()).file)
    execution = query_execute(app=tenant.app, question=PDF_QUESTION, user=tenant.user, origin="web")
    page = tenant.client.get(f"/answers/{execution.pk}/").content.decode()
    claim = execution.quoted_sources.get(quoted_as="1").claims.first()
    assert claim is not None
    segment = claim.segment
    crop = f"/answers/{execution.pk}/sources/1/crop.png?claim={segment}"
    assert f'src="{crop}"' in page  # the [1] preview shows it
    response = tenant.client.get(crop)
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert response.content.startswith(b"\x89PNG")
    import pymupdf

    pixmap = pymupdf.Pixmap(response.content)
    assert pixmap.width > pixmap.height, "a band of the page, not the whole page"
    again = tenant.client.get(crop, HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304
    other = signed_in(member_of(tenant.org, "bob"))
    assert other.get(crop).status_code == 404
