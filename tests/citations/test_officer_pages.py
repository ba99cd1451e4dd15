"""Officers' pages (issue 33): the reader's source viewer opened from the admin for
any answer of the officer's organization, quoted sentences marked in the admin's
chunk text, lists newest first with their time and latency, the audit trail in
plain words, and the printable report with every retrieval hit.

Documents are ingested in-process by the real pipeline stages (no worker needed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import connection
from django.db.models import Model
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from audit.models import DocumentEvent, EvidenceEntry
from citations.llm_apps import app_create
from citations.models import (
    AnswerFeedback,
    ClaimCheck,
    ClaimCitation,
    ModelCall,
    QueryExecution,
    QuotedSource,
    RagTrace,
    ReasoningStep,
    ResponseRecord,
    RetrievalHit,
    Run,
    StepClaim,
    StepSourceAttribution,
)
from citations.services import query_execute
from documents.models import Organization, OrganizationMember
from tests import factories
from tests.web.conftest import PASSWORD, REMOTE_WORK, ingest_now, signed_in

pytestmark = pytest.mark.django_db

QUESTION = "How many days per week can employees work remotely?"
OTHER = b"# Globex rules\n\nGlobex employees work remotely one day per week only.\n"


def officer_of(org: Organization, name: str = "olivia", role: str = "officer") -> User:
    """A member of ``org`` with ``role`` who reaches the admin: the one place these
    tests set up officers (and, for the refusals, members of other roles)."""
    user = get_user_model().objects.create_user(name, password=PASSWORD, is_staff=True)
    OrganizationMember.objects.create(organization=org, user=user, role=role)
    return user


@dataclass
class Evidence:
    acme: Organization
    globex: Organization
    answer: QueryExecution  # Acme's, asked through the API (no web user)
    other: QueryExecution  # Globex's


@pytest.fixture
def evidence(db: None) -> Evidence:
    acme, globex = (
        factories.organization("Officers Acme"),
        factories.organization("Officers Globex"),
    )
    for org, name, text in ((acme, "remote.md", REMOTE_WORK), (globex, "globex.md", OTHER)):
        source = factories.data_source(org, "Handbook")
        assert ingest_now(factories.upload(source, name, text).file).status == "ready"
    acme_app = app_create(organization=acme, name="HR", data_source_names=["Handbook"])
    globex_app = app_create(organization=globex, name="HR", data_source_names=["Handbook"])
    return Evidence(
        acme=acme,
        globex=globex,
        answer=query_execute(app=acme_app, question=QUESTION),
        other=query_execute(app=globex_app, question=QUESTION),
    )


def _source_url(execution: QueryExecution, quoted_as: str = "1") -> str:
    return reverse("admin:citations_queryexecution_source", args=[execution.pk, quoted_as])


def _hit_url(execution: QueryExecution, k_pos: int) -> str:
    return reverse("admin:citations_queryexecution_hit", args=[execution.pk, k_pos])


def _evidence_page(execution: QueryExecution) -> str:
    return reverse("admin:citations_queryexecution_change", args=[execution.pk])


# --- 1. the reader's source viewer, from the admin ------------------------------------


def test_it_opens_a_quoted_source_in_the_readers_viewer_with_the_quote_marked(
    evidence: Evidence,
) -> None:
    page = signed_in(officer_of(evidence.acme)).get(_source_url(evidence.answer))
    assert page.status_code == 200
    assert "web/source.html" in [t.name for t in page.templates]
    html = page.content.decode()
    claim = ClaimCitation.objects.filter(query=evidence.answer, quoted_source__quoted_as="1")[0]
    passage = html.split('id="passage">', 1)[1].split("</blockquote>", 1)[0]
    marked = " ".join(re.findall(r"<mark>(.*?)</mark>", passage))
    assert claim.source_sentence.split()[0] in marked and "two days per week" in marked
    assert f'href="{_evidence_page(evidence.answer)}">← Back to the evidence</a>' in html
    assert "remote.md" in html and "Provenance chain" in html


def test_it_opens_every_retrieval_hit_cited_or_not(evidence: Evidence) -> None:
    client = signed_in(officer_of(evidence.acme))
    hits = list(RetrievalHit.objects.filter(query=evidence.answer))
    cited = set(QuotedSource.objects.filter(query=evidence.answer).values_list("hit_id", flat=True))
    assert any(hit.pk not in cited for hit in hits)  # the answer leaves some hits uncited
    evidence_html = client.get(_evidence_page(evidence.answer)).content.decode()
    for hit in hits:
        assert _hit_url(evidence.answer, hit.k_pos) in evidence_html
        page = client.get(_hit_url(evidence.answer, hit.k_pos))
        assert page.status_code == 200
        assert f"Retrieved #{hit.k_pos}: remote.md" in page.content.decode()
    for source in QuotedSource.objects.filter(query=evidence.answer):
        assert _source_url(evidence.answer, source.quoted_as) in evidence_html


def test_the_readers_route_opens_any_answer_to_the_officer_and_none_to_an_editor(
    evidence: Evidence,
) -> None:
    """One reading rule on every surface (core.roles ``Reach``): an officer reads every
    answer of the organization on the reader's pages as in the admin; an editor, who
    does not audit, reads its own only."""
    officer = signed_in(officer_of(evidence.acme))
    assert officer.get(reverse("web-source", args=[evidence.answer.pk, "1"])).status_code == 200
    editor = signed_in(officer_of(evidence.acme, "edgar", role="editor"))
    assert editor.get(reverse("web-source", args=[evidence.answer.pk, "1"])).status_code == 404


def test_another_organizations_officer_gets_404(evidence: Evidence) -> None:
    client = signed_in(officer_of(evidence.globex, "gustav"))
    assert client.get(_source_url(evidence.answer)).status_code == 404
    assert client.get(_hit_url(evidence.answer, 1)).status_code == 404
    crop = reverse("admin:citations_queryexecution_source_crop", args=[evidence.answer.pk, "1"])
    assert client.get(crop).status_code == 404
    assert client.get(_source_url(evidence.other)).status_code == 200  # their own


def test_a_member_who_is_not_staff_is_sent_to_the_admin_sign_in(evidence: Evidence) -> None:
    user = get_user_model().objects.create_user("vera", password=PASSWORD)
    OrganizationMember.objects.create(organization=evidence.acme, user=user, role="viewer")
    for url in (_source_url(evidence.answer), _hit_url(evidence.answer, 1)):
        page = signed_in(user).get(url)
        assert page.status_code == 302 and page["Location"].startswith("/admin/login/")


def test_staff_who_may_not_read_answers_are_refused(evidence: Evidence) -> None:
    editor = officer_of(evidence.acme, "edith", role="editor")
    page = signed_in(editor).get(_source_url(evidence.answer))
    assert page.status_code == 403


def test_anonymous_is_sent_to_sign_in(evidence: Evidence) -> None:
    page = Client().get(_source_url(evidence.answer))
    assert page.status_code == 302
    assert page["Location"].startswith("/admin/login/?next=")


def test_unknown_sources_and_hits_are_404(evidence: Evidence) -> None:
    client = signed_in(officer_of(evidence.acme))
    assert client.get(_source_url(evidence.answer, "99")).status_code == 404
    assert client.get(_hit_url(evidence.answer, 999)).status_code == 404


# --- 2. quoted sentences marked in the admin's chunk text -----------------------------


def test_the_evidence_page_marks_each_sources_quoted_sentences(evidence: Evidence) -> None:
    html = signed_in(officer_of(evidence.acme)).get(_evidence_page(evidence.answer)).content
    source = html.decode().split('id="source-1"', 1)[1].split("</article>", 1)[0]
    rendered = source.split('<div class="rendered">', 1)[1].split("</div>", 1)[0]
    assert "<mark>" in rendered and "two days per week" in " ".join(
        re.findall(r"<mark>(.*?)</mark>", rendered)
    )


def test_the_chunk_page_marks_the_sentences_answers_quoted(evidence: Evidence) -> None:
    source = QuotedSource.objects.get(query=evidence.answer, quoted_as="1")
    page = signed_in(officer_of(evidence.acme)).get(
        reverse("admin:documents_chunk_change", args=[source.chunk_id])
    )
    html = page.content.decode()
    assert "quoted sentences marked" in html
    rendered = html.split('class="rendered-markdown">', 1)[1].split("</div>", 1)[0]
    assert "two days per week" in " ".join(re.findall(r"<mark>(.*?)</mark>", rendered))


# --- 3. lists newest first, with created-at and latency -------------------------------

# each list of answers and their evidence: (model, its time column, its latency column)
LISTS = [
    (QueryExecution, "created_at", "latency"),
    (Run, "created_at", "latency"),
    (ResponseRecord, "created_at", "latency"),
    (ModelCall, "created_at", "call_latency"),
    (RetrievalHit, "answered_at", "answer_latency"),
    (QuotedSource, "answered_at", "answer_latency"),
    (ClaimCitation, "answered_at", "answer_latency"),
    (ClaimCheck, "answered_at", "answer_latency"),
    (ReasoningStep, "answered_at", "answer_latency"),
    (StepSourceAttribution, "answered_at", "answer_latency"),
    (StepClaim, "answered_at", "answer_latency"),
    (RagTrace, "answered_at", "answer_latency"),
]


def _newest_first(model: type[Model]) -> bool:
    """Whether the model's changelist starts with its newest rows."""
    model_admin = admin.site._registry[model]
    ordering = [str(field) for field in (model_admin.ordering or model._meta.ordering or [])]
    return ordering[0].startswith("-")


@pytest.mark.parametrize(("model", "time_column", "latency_column"), LISTS)
def test_each_list_shows_time_and_latency_newest_first(
    evidence: Evidence, model: type[Model], time_column: str, latency_column: str
) -> None:
    model_admin = admin.site._registry[model]
    assert {time_column, latency_column} <= set(model_admin.list_display)
    assert _newest_first(model)
    url = reverse(f"admin:citations_{model._meta.model_name}_changelist")
    assert signed_in(officer_of(evidence.acme)).get(url).status_code == 200


@pytest.mark.parametrize("model", [EvidenceEntry, DocumentEvent, AnswerFeedback])
def test_the_audit_lists_are_newest_first_with_their_time(
    evidence: Evidence, model: type[Model]
) -> None:
    assert "created_at" in admin.site._registry[model].list_display
    assert _newest_first(model)


def test_the_answers_list_puts_the_newest_first_with_its_latency(evidence: Evidence) -> None:
    newer = query_execute(app=evidence.answer.app, question="What do employees receive?")
    page = signed_in(officer_of(evidence.acme)).get(
        reverse("admin:citations_queryexecution_changelist")
    )
    assert [e.pk for e in page.context["cl"].result_list] == [newer.pk, evidence.answer.pk]
    html = page.content.decode()
    assert "column-created_at" in html and "column-latency" in html
    assert f"{newer.latency_ms:.0f} ms" in html


# --- 4. the audit trail in plain words --------------------------------------------------


def test_the_trail_says_what_each_entry_records_and_links_to_it(evidence: Evidence) -> None:
    client = signed_in(officer_of(evidence.acme))
    url = reverse("admin:audit_evidenceentry_changelist")
    with CaptureQueriesContext(connection) as before:
        client.get(url)
    factories.upload(
        factories.data_source(evidence.acme, "Handbook"), "remote.md", REMOTE_WORK + b"\nNew."
    )
    query_execute(app=evidence.answer.app, question="What do employees receive?")
    with CaptureQueriesContext(connection) as after:
        html = client.get(url).content.decode()
    assert len(after) == len(before)  # described a page at a time, never row by row
    cited = QuotedSource.objects.filter(query=evidence.answer).count()
    answer_link = _evidence_page(evidence.answer)
    sources = f"{cited} source{'s' if cited != 1 else ''}"
    assert f'<a href="{answer_link}">answer to “{QUESTION}” cited {sources}</a>' in html
    first, second = evidence.acme.data_sources.get().files.order_by("revision")
    for record in (first, second):
        file_link = reverse("admin:documents_file_change", args=[record.pk])
        words = f"upload of remote.md revision {record.revision} by system"
        assert f'<a href="{file_link}">{words}</a>' in html
    hit_words = f"retrieval hit #1 (remote.md) for the answer to “{QUESTION}”"
    assert f'<a href="{answer_link}#hit-1">{hit_words}</a>' in html
    assert "Officers Globex" not in html and str(evidence.other.pk) not in html


def test_an_entry_page_says_what_it_records(evidence: Evidence) -> None:
    entry = EvidenceEntry.objects.filter(
        record_table="citations_queryexecution", record_id=str(evidence.answer.pk)
    ).latest("seq")
    page = signed_in(officer_of(evidence.acme)).get(
        reverse("admin:audit_evidenceentry_change", args=[entry.seq])
    )
    assert f"answer to “{QUESTION}” cited" in page.content.decode()


# --- 5. the printable report -------------------------------------------------------------


def test_the_report_lists_every_retrieval_hit(evidence: Evidence) -> None:
    page = signed_in(officer_of(evidence.acme)).get(
        reverse("admin:citations_queryexecution_report", args=[evidence.answer.pk])
    )
    html = page.content.decode()
    hits = RetrievalHit.objects.filter(query=evidence.answer).order_by("k_pos")
    assert hits.count() > QuotedSource.objects.filter(query=evidence.answer).count()
    assert re.findall(r'<tr id="hit-(\d+)">', html) == [str(h.k_pos) for h in hits]
    assert "not cited" in html
    for hit in hits:
        assert hit.chunk_hash in html


def test_the_report_of_another_organization_is_404(evidence: Evidence) -> None:
    page = signed_in(officer_of(evidence.globex, "gustav")).get(
        reverse("admin:citations_queryexecution_report", args=[evidence.answer.pk])
    )
    assert page.status_code == 404
