"""Ask, the answer page, history: [n] links, sources panel, uncited hits,
no-answer, documents changed or deleted since, and 404 for anyone else's answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from pytest_django import DjangoAssertNumQueries

from citations.composition import NOT_FOUND
from citations.models import QueryExecution
from citations.services import query_execute
from documents.ingestion import file_delete
from documents.models import File
from tests import factories
from tests.web.conftest import Tenant, ingest_now, member_of, signed_in

pytestmark = pytest.mark.django_db

QUESTION = "How many days per week may employees work remotely?"


def _ask(tenant: Tenant, question: str = QUESTION) -> QueryExecution:
    response = tenant.client.post("/", {"app": str(tenant.app.pk), "question": question})
    assert response.status_code == 303, response.content
    return QueryExecution.objects.get(pk=response["Location"].split("/")[2])


def test_it_says_when_the_organization_has_no_app(db: None) -> None:
    org = factories.organization("Empty")
    body = signed_in(member_of(org, "bob")).get("/").content.decode()
    assert "no question-answering app yet" in body
    assert "<textarea" not in body


def test_it_shows_the_question_box_of_the_chosen_app(tenant: Tenant) -> None:
    other = factories.data_source(tenant.org, "Legal")
    from citations.llm_apps import app_create

    legal = app_create(organization=tenant.org, name="Legal", data_source_names=[other.name])
    body = tenant.client.get(f"/?app={legal.pk}").content.decode()
    assert f'<option value="{legal.pk}" selected>Legal</option>' in body
    assert '<label for="id_question">Question</label>' in body
    theirs = factories.organization("Globex")
    foreign = app_create(
        organization=theirs,
        name="X",
        data_source_names=[factories.data_source(theirs, "S").name],
        is_public=True,
    )
    assert tenant.client.get(f"/?app={foreign.pk}").status_code == 404


def test_it_answers_with_linked_references_and_a_sources_panel(
    tenant: Tenant, remote_work: File
) -> None:
    execution = _ask(tenant)
    assert execution.caller_user == tenant.user and execution.origin == "web"
    source = execution.quoted_sources.get(quoted_as="1")
    body = tenant.client.get(f"/answers/{execution.pk}/").content.decode()
    # [1] opens the viewer at the quoted sentence's line (line 5), not the chunk's first
    assert source.line_number_start == 1
    viewer = f"/answers/{execution.pk}/sources/1/#L5"
    link = f'<a class="ref" href="{viewer}" aria-label="Source 1: remote.md" aria-describedby="'
    assert link in body and 'role="tooltip"' in body  # its preview
    assert "two days per week" in body
    # the sources panel: name, section path, lines, score, passage with the quote marked;
    # the chunk starts under the title, the quoted sentence under "Eligibility"
    assert 'id="source-1"' in body and "<strong>remote.md</strong>" in body
    assert source.section == "Remote work charter"
    assert "<dt>Section</dt><dd>Remote work charter &gt; Eligibility</dd>" in body
    assert f"{source.score:.3f}" in body
    assert "<mark>Employees may work remotely two days per week" in body
    assert f'href="/v1/flow/files/{remote_work.pk}/content"' in body
    assert "Open [1] in context" in body
    # the viewer's heading path is the quoted sentence's, and it opens at its line
    viewer_page = tenant.client.get(viewer.split("#")[0]).content.decode()
    crumbs = viewer_page.split('aria-label="Heading path"')[1].split("</nav>")[0]
    assert "<li>Remote work charter</li>" in crumbs and "<li>Eligibility</li>" in crumbs


def test_it_keeps_uncited_hits_on_demand(tenant: Tenant, remote_work: File) -> None:
    execution = _ask(tenant)
    cited = set(execution.quoted_sources.values_list("hit__k_pos", flat=True))
    uncited = execution.hits.exclude(k_pos__in=cited)
    assert uncited.exists()
    body = tenant.client.get(f"/answers/{execution.pk}/").content.decode()
    assert f"Retrieved but not cited ({uncited.count()})" in body
    first = uncited.first()
    assert first is not None
    page = tenant.client.get(f"/answers/{execution.pk}/retrieved/{first.k_pos}/")
    assert page.status_code == 200
    assert "Retrieved at rank" in page.content.decode()


def test_it_says_when_the_documents_have_no_answer(tenant: Tenant, remote_work: File) -> None:
    execution = _ask(tenant, "What is the airspeed velocity of an unladen swallow?")
    assert execution.answer == NOT_FOUND
    body = tenant.client.get(f"/answers/{execution.pk}/").content.decode()
    assert 'id="no-answer"' in body and "No answer was found in the documents of HR" in body
    assert "The answer cites no source." in body


def test_it_refuses_an_empty_question_on_the_page(tenant: Tenant) -> None:
    response = tenant.client.post("/", {"app": str(tenant.app.pk), "question": "   "})
    assert response.status_code == 400
    assert b'id="question-error" role="alert">The question must not be empty' in response.content
    assert not QueryExecution.objects.exists()


def test_another_users_answer_is_not_found(tenant: Tenant, remote_work: File) -> None:
    execution = _ask(tenant)
    colleague = signed_in(member_of(tenant.org, "bob"))
    outsider = signed_in(member_of(factories.organization("Globex"), "mallory"))
    for client in (colleague, outsider):
        for url in (
            f"/answers/{execution.pk}/",
            f"/answers/{execution.pk}/sources/1/",
            f"/answers/{execution.pk}/retrieved/1/",
        ):
            assert client.get(url).status_code == 404, url
        assert QUESTION not in client.get("/history/").content.decode()
    assert tenant.client.get("/answers/not-a-uuid/").status_code == 404
    assert tenant.client.get(f"/answers/{execution.pk}/sources/99/").status_code == 404


def test_history_lists_only_my_questions_and_reopens_them(
    tenant: Tenant, remote_work: File
) -> None:
    mine = _ask(tenant)
    query_execute(app=tenant.app, question="Who provides the laptop?", user=None)
    body = tenant.client.get("/history/").content.decode()
    assert f'href="/answers/{mine.pk}/"' in body and "Who provides the laptop?" not in body
    assert "1 source" in body and "document changed since" not in body


def test_history_is_empty_before_the_first_question(tenant: Tenant) -> None:
    assert "You have not asked anything yet" in tenant.client.get("/history/").content.decode()


def test_an_answer_reopens_as_it_was_after_the_document_changed(
    tenant: Tenant, remote_work: File
) -> None:
    execution = _ask(tenant)
    newer = factories.upload(
        tenant.source, "remote.md", b"# Remote work charter\n\nRemote work is suspended.\n"
    ).file
    assert ingest_now(newer).revision == 2
    body = tenant.client.get(f"/answers/{execution.pk}/").content.decode()
    assert 'id="changed-notice"' in body
    assert "Changed since this answer: revision 2 replaced revision 1" in body
    assert "two days per week" in body and "suspended" not in body
    viewer = tenant.client.get(f"/answers/{execution.pk}/sources/1/").content.decode()
    assert "revision 2 is now current. This is revision 1, as cited." in viewer
    assert "two days per week" in viewer and remote_work.sha256 in viewer
    assert "document changed since" in tenant.client.get("/history/").content.decode()


def test_an_answer_reopens_after_the_document_was_deleted(
    tenant: Tenant, remote_work: File
) -> None:
    execution = _ask(tenant)
    file_delete(file=remote_work, reason="outdated policy")
    body = tenant.client.get(f"/answers/{execution.pk}/").content.decode()
    assert "Deleted from the library on" in body and "(outdated policy)" in body
    assert "two days per week" in body
    viewer = tenant.client.get(f"/answers/{execution.pk}/sources/1/")
    assert viewer.status_code == 200
    assert "This document was deleted on" in viewer.content.decode()
    assert "document changed since" in tenant.client.get("/history/").content.decode()
    assert "deleted" in tenant.client.get("/library/").content.decode()


def test_the_history_query_count_does_not_grow_with_answers(
    tenant: Tenant, remote_work: File, django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    for _ in range(2):
        _ask(tenant)
    with django_assert_num_queries(6) as few:
        tenant.client.get("/history/")
    baseline = len(few.captured_queries)
    for _ in range(4):
        _ask(tenant)
    with django_assert_num_queries(baseline):
        tenant.client.get("/history/")


def test_sign_out_needs_a_post_and_ends_the_session(tenant: Tenant) -> None:
    assert tenant.client.get("/accounts/logout/").status_code == 405
    response = tenant.client.post("/accounts/logout/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    assert tenant.client.get("/").status_code == 302
    assert isinstance(tenant.client, Client)


def test_table_rows_answer_their_questions_and_not_unrelated_ones(
    tenant: Tenant, corpus: Path
) -> None:
    """A short row shares words easily ("Color" for a question about a colour): it
    must be close in meaning to be quoted, while rows that answer still are."""
    for name in (
        "pymupdf/small-table.pdf",
        "py-pdf-sample-files/026-latex-multicolumn/multicolumn.pdf",
        "markitdown/test_files/REPAIR-2022-INV-001_multipage.pdf",
    ):
        path = corpus / name
        record = ingest_now(factories.upload(tenant.source, path.name, path.read_bytes()).file)
        assert record.status == "ready", record.error_message
    answered = {
        "What is the capital of Belgium?": "Brussels",
        "What is the boiling point of metals?": "2755.9",
        "What is the model of Bruce Wayne's vehicle?": "Batmobile",
    }
    for question, fact in answered.items():
        assert fact in query_execute(app=tenant.app, question=question).answer, question
    for question in (
        "What color is the sky on Mars?",  # rows "| | Color | White": cosine 0.37
        "How many employees work in the Berlin office?",  # a row of capitals: 0.34
    ):
        execution = query_execute(app=tenant.app, question=question)
        assert execution.answer == NOT_FOUND, (question, execution.answer)


def test_a_short_json_value_answers_its_question_and_not_unrelated_ones(tenant: Tenant) -> None:
    """A JSON value is a short "**key**: value" line: it was never quoted (fewer than
    four words), so "Who is the health benefits provider?" quoted the coverage line
    beside it; it must still be close in meaning to count."""
    benefits = (
        b'{"health": {"provider": "MediCare Plus", "coverage": "employee and family",'
        b' "car": {"color": "white", "model": "estate"}}}'
    )
    record = ingest_now(factories.upload(tenant.source, "benefits.json", benefits).file)
    assert record.status == "ready", record.error_message
    execution = query_execute(app=tenant.app, question="Who is the health benefits provider?")
    assert execution.answer.startswith("**provider**: MediCare Plus [1]"), execution.answer
    # stored verbatim, read without the Markdown: "provider: MediCare Plus [1]"
    asked = _ask(tenant, "Who is the health benefits provider?")
    assert asked.answer == execution.answer
    body = tenant.client.get(f"/answers/{asked.pk}/").content.decode()
    # rendered Markdown: the key is bold, its asterisks gone
    assert "<strong>provider</strong>: MediCare Plus <a" in body and "**provider**" not in body
    history = tenant.client.get("/history/").content.decode()
    assert "provider: MediCare Plus [1]" in history and "**provider**" not in history
    for question in ("What color is the sky on Mars?", "What is the capital of France?"):
        execution = query_execute(app=tenant.app, question=question)
        assert execution.answer == NOT_FOUND, (question, execution.answer)
