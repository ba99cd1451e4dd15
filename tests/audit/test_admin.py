"""The officers' admin: the whole chain on one page, search and filters without
N+1 queries, exports, the printable report, roles and tenant scoping."""

from __future__ import annotations

import csv
import hashlib
import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from pytest_django import DjangoAssertNumQueries

from audit.models import DocumentEvent
from citations.models import QueryExecution
from citations.services import query_execute
from documents.converters import converter_for
from documents.fulltext import ANALYZER
from documents.models import DocumentMarkdown, File, Organization, OrganizationMember
from tests import factories
from tests.audit.conftest import Trail
from tests.support.http import streamed
from tests.support.tamper import triggers_off

pytestmark = pytest.mark.django_db

QUESTION = "How long are invoices kept?"


def _officer(org: Organization, name: str = "olivia", role: str = "officer") -> Client:
    """A member with ``role`` (core.roles) who reaches the admin."""
    user = get_user_model().objects.create_user(name, password="officer-pass-123", is_staff=True)
    OrganizationMember.objects.create(organization=org, user=user, role=role)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def answers(trail: Trail) -> tuple[QueryExecution, QueryExecution]:
    acme = query_execute(app=trail.acme_app, question=QUESTION)
    globex = query_execute(app=trail.globex_app, question=QUESTION)
    return acme, globex


def test_the_answer_page_shows_the_whole_chain(
    trail: Trail, answers: tuple[QueryExecution, QueryExecution]
) -> None:
    acme, _ = answers
    page = _officer(trail.acme).get(f"/admin/citations/queryexecution/{acme.pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    source = acme.quoted_sources.get(quoted_as="1")
    for expected in (
        '<a class="ref" href="#source-1" aria-label="Source 1">[1]</a>',  # rendered Markdown
        "handbook.md — revision 1",
        "lines ",
        f"section: {source.section}",
        "Invoices are kept for seven years",
        acme.index_hash,
        "sentence-transformers/all-MiniLM-L6-v2:mean",
        ANALYZER,
        "Every retrieval hit",
        "k_pos",
        "score_norm",
        "at answer time: <b>ok</b>",
        "the cited chunks, revisions and index are still those the answer used.",
        "intact",
        acme.caller,
        f"/admin/documents/chunk/{source.chunk_id}/change/",
        f"/admin/documents/file/{source.file_id}/download/",
    ):
        assert expected in html, expected
    claim = acme.claim_citations.first()
    assert claim is not None
    assert claim.reply_sentence in html and claim.source_sentence in html
    # the quoted chunk byte for byte (escaped; line breaks and runs of spaces kept)
    from django.utils.html import escape

    assert f"<blockquote>{escape(source.chunk_text)}</blockquote>" in html


def test_the_chunk_page_shows_the_chunk_rendered_beside_its_stored_text(
    trail: Trail, answers: tuple[QueryExecution, QueryExecution]
) -> None:
    acme, _ = answers
    source = acme.quoted_sources.get(quoted_as="1")
    page = _officer(trail.acme).get(f"/admin/documents/chunk/{source.chunk_id}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    rendered = html.split('<div class="rendered-markdown">', 1)[1].split("</div>", 1)[0]
    assert "<h5>Retention</h5>" in rendered  # headings as headings, below the page's own
    # the sentence the answer quotes is marked (issue 33)
    assert "<p><mark>Invoices are kept for seven years" in rendered
    assert "## Retention" in html  # and the stored Markdown, byte for byte, in its field


def test_search_and_filters_find_the_answer_without_n_plus_one(
    trail: Trail,
    answers: tuple[QueryExecution, QueryExecution],
    django_assert_max_num_queries: DjangoAssertNumQueries,
) -> None:
    client = _officer(trail.acme)
    for _ in range(5):
        query_execute(app=trail.acme_app, question="How many days of paid leave per year?")
    for params in (
        {"q": "invoices kept"},
        {"q": "handbook.md"},
        {"q": "seven years"},
        {"validator_status__exact": "ok"},
        {"hits__retriever_type": "HYBRID_SEARCH"},
        {"document": "handbook.md"},
    ):
        response = client.get("/admin/citations/queryexecution/", params)
        assert response.status_code == 200
        assert QUESTION in response.content.decode(), params
    with django_assert_max_num_queries(25):
        client.get("/admin/citations/queryexecution/")
    for _ in range(10):
        query_execute(app=trail.acme_app, question="Are trains preferred over flights?")
    with django_assert_max_num_queries(25):  # the same count with twice the rows
        client.get("/admin/citations/queryexecution/")


def test_staff_never_see_another_organizations_records(
    trail: Trail, answers: tuple[QueryExecution, QueryExecution]
) -> None:
    acme, globex = answers
    client = _officer(trail.acme)
    listing = client.get("/admin/citations/queryexecution/").content.decode()
    assert str(acme.pk) in listing and str(globex.pk) not in listing
    assert client.get(f"/admin/citations/queryexecution/{globex.pk}/change/").status_code == 404
    assert client.get(f"/admin/citations/queryexecution/{globex.pk}/report/").status_code == 404
    globex_source = globex.quoted_sources.first()
    assert globex_source is not None
    globex_file = globex_source.file_id
    assert client.get(f"/admin/documents/file/{globex_file}/download/").status_code == 404
    files = client.get("/admin/documents/file/").content.decode()
    assert "handbook.md" in files and "globex.md" not in files


def test_officers_cannot_edit_or_delete_evidence(
    trail: Trail, answers: tuple[QueryExecution, QueryExecution]
) -> None:
    acme, _ = answers
    client = _officer(trail.acme)
    base = f"/admin/citations/queryexecution/{acme.pk}"
    assert client.post(f"{base}/delete/", {"post": "yes"}).status_code == 403
    assert client.post(f"{base}/change/", {"answer": "rewritten"}).status_code == 403
    assert client.get("/admin/citations/queryexecution/add/").status_code == 403
    bulk = client.post(
        "/admin/citations/queryexecution/",
        {"action": "delete_selected", "_selected_action": [acme.pk], "post": "yes"},
    )
    assert bulk.status_code in {200, 302}
    acme.refresh_from_db()
    assert QueryExecution.objects.filter(pk=acme.pk).exists()
    assert "seven years" in acme.answer


def test_exports_and_report(trail: Trail, answers: tuple[QueryExecution, QueryExecution]) -> None:
    acme, _ = answers
    client = _officer(trail.acme)
    for action, parse in (
        ("export_csv", lambda b: list(csv.DictReader(io.StringIO(b)))),
        ("export_json", json.loads),
    ):
        response = client.post(
            "/admin/citations/queryexecution/", {"action": action, "_selected_action": [acme.pk]}
        )
        assert response.status_code == 200 and response.streaming
        rows = parse(streamed(response).decode())
        assert len(rows) >= 1
        first = rows[0]
        assert str(first["query_id"]) == str(acme.pk)
    data = json.loads(
        streamed(
            client.post(
                "/admin/citations/queryexecution/",
                {"action": "export_json", "_selected_action": [acme.pk]},
            )
        )
    )
    source = data[0]["quoted_sources"][0]
    assert source["document"] == "handbook.md" and source["file_sha256"] == trail.handbook.sha256
    assert data[0]["claims"][0]["reply_sentence"] in data[0]["answer"]
    report = client.get(f"/admin/citations/queryexecution/{acme.pk}/report/")
    html = report.content.decode()
    assert report.status_code == 200 and "Provenance report" in html and "@media print" in html
    assert "Invoices are kept for seven years" in html


def test_an_officer_download_is_byte_identical_and_recorded(trail: Trail) -> None:
    client = _officer(trail.acme)
    response = client.get(
        f"/admin/documents/file/{trail.handbook.pk}/download/", REMOTE_ADDR="192.0.2.10"
    )
    data = streamed(response)
    assert hashlib.sha256(data).hexdigest() == trail.handbook.sha256
    event = DocumentEvent.objects.filter(file=trail.handbook, kind="download").latest("created_at")
    assert event.actor == "user:olivia" and event.origin == "192.0.2.10"
    upload = DocumentEvent.objects.get(file=trail.handbook, kind="upload")
    assert upload.actor == "system"


def _operator(org: Organization, name: str = "oscar") -> Client:
    """An editor: may run files through ingestion again."""
    return _officer(org, name, role="editor")


def test_officers_cannot_retry_or_convert_files_again(trail: Trail) -> None:
    with triggers_off():
        DocumentMarkdown.objects.filter(file=trail.handbook).update(converter_version="0.9.0")
    client = _officer(trail.acme)
    page = client.get("/admin/documents/file/").content.decode()
    assert 'value="convert_again"' not in page and 'value="retry_failed"' not in page
    for action in ("convert_again", "retry_failed"):
        response = client.post(
            "/admin/documents/file/",
            {"action": action, "_selected_action": [trail.handbook.pk]},
            follow=True,
        )
        assert response.status_code == 200  # the list again, the action not run
        assert "queued" not in response.content.decode()
    trail.handbook.refresh_from_db()
    assert trail.handbook.status == "ready"
    assert not DocumentEvent.objects.filter(kind="reconversion").exists()


def test_convert_again_queues_outdated_files_of_the_operators_tenant_and_records_who(
    trail: Trail,
) -> None:
    client = _operator(trail.acme)
    other = File.objects.get(name="globex.md")
    with triggers_off():
        DocumentMarkdown.objects.filter(file__in=[trail.handbook, other]).update(
            converter_version="0.9.0"
        )
    assert 'value="convert_again"' in client.get("/admin/documents/file/").content.decode()
    response = client.post(
        "/admin/documents/file/",
        {"action": "convert_again", "_selected_action": [trail.handbook.pk, other.pk]},
        follow=True,
    )
    assert "1 file(s) queued to convert again" in response.content.decode()
    trail.handbook.refresh_from_db()
    assert trail.handbook.status == "pending"
    event = DocumentEvent.objects.get(file=trail.handbook, kind="reconversion")
    current = converter_for("markdown")
    assert event.actor == "user:oscar" and event.origin == "127.0.0.1"
    assert event.reason == f"admin action: {current.name} 0.9.0 -> {current.name} {current.version}"
    # another tenant's file is out of the operator's reach, whatever ids are posted
    assert File.objects.get(pk=other.pk).status == "ready"
    assert not DocumentEvent.objects.filter(file=other, kind="reconversion").exists()
    # a file already converting (or current) is left alone, and said so as a warning
    again = client.post(
        "/admin/documents/file/",
        {"action": "convert_again", "_selected_action": [trail.handbook.pk]},
        follow=True,
    ).content.decode()
    assert "0 file(s) queued to convert again; 1 left alone" in again
    assert 'class="warning"' in again
    assert DocumentEvent.objects.filter(kind="reconversion").count() == 1


def test_no_list_names_another_tenant_in_its_filters(
    trail: Trail, answers: tuple[QueryExecution, QueryExecution]
) -> None:
    """Every list an officer can open, filters included, names only their own
    organization's records: the other tenant's name and app appear nowhere."""
    from django.contrib import admin

    client = _officer(trail.acme)
    opened = 0
    for model in admin.site._registry:
        meta = model._meta
        page = client.get(f"/admin/{meta.app_label}/{meta.model_name}/")
        if page.status_code == 403:
            continue  # not the officers' to see at all
        assert page.status_code == 200, meta.label
        html = page.content.decode()
        assert "Globex" not in html, meta.label
        opened += 1
    assert opened >= 10


def test_an_app_form_offers_only_the_staff_members_own_organization_and_sources(
    trail: Trail,
) -> None:
    """A tenant's admin who may add apps picks among their own organization and
    data sources; the other tenant's do not appear as choices."""
    from documents.models import DataSource

    client = _officer(trail.acme, "adam", role="editor")
    html = client.get("/admin/citations/app/add/").content.decode()
    acme_source = DataSource.objects.get(organization=trail.acme)
    globex_source = DataSource.objects.get(organization=trail.globex)
    assert f'value="{trail.acme.pk}"' in html and f'value="{acme_source.pk}"' in html
    assert f'value="{trail.globex.pk}"' not in html and f'value="{globex_source.pk}"' not in html
    assert "Globex" not in html


def test_a_membership_form_offers_only_people_of_ones_own_organizations(trail: Trail) -> None:
    _officer(trail.globex, "gina")  # a member of the other tenant
    client = _officer(trail.acme, "adam", role="admin")
    user = get_user_model().objects.get(username="adam")
    html = client.get("/admin/documents/organizationmember/add/").content.decode()
    gina = get_user_model().objects.get(username="gina")
    assert f'value="{user.pk}"' in html and f'value="{gina.pk}"' not in html
    assert "gina" not in html


def test_an_officer_sees_every_link_of_their_answers_chain_and_none_of_others(
    trail: Trail, answers: tuple[QueryExecution, QueryExecution]
) -> None:
    """Hits, quoted sources, claims and traces were chained without an organization,
    so an officer's scoped evidence list held only answers and document events."""
    from audit.models import EvidenceEntry

    acme, globex = answers
    rows: dict[str, list[object]] = {
        "citations_queryexecution": [acme.pk],
        "citations_retrievalhit": list(acme.hits.values_list("pk", flat=True)),
        "citations_quotedsource": list(acme.quoted_sources.values_list("pk", flat=True)),
        "citations_claimcitation": list(acme.claim_citations.values_list("pk", flat=True)),
        "rag_traces": list(acme.traces.values_list("pk", flat=True)),
    }
    assert all(rows.values()), rows
    for table, pks in rows.items():
        entries = EvidenceEntry.objects.filter(record_table=table, record_id__in=map(str, pks))
        assert entries.count() == len(pks), table
        assert set(entries.values_list("organization_id", flat=True)) == {trail.acme.pk}, table
    assert not EvidenceEntry.objects.filter(organization_id__isnull=True).exists()

    client = _officer(trail.acme)
    shown = client.get("/admin/audit/evidenceentry/").context["cl"].queryset
    assert set(shown.values_list("record_table", flat=True)) >= set(rows)
    assert shown.count() == EvidenceEntry.objects.filter(organization_id=trail.acme.pk).count()
    globex_hits = [str(pk) for pk in globex.hits.values_list("pk", flat=True)]
    assert not shown.filter(record_table="citations_retrievalhit", record_id__in=globex_hits)


def test_the_backfill_migration_gives_old_entries_their_answer_s_organization(
    trail: Trail, answers: tuple[QueryExecution, QueryExecution]
) -> None:
    import importlib

    from django.db import connection

    from audit.ledger import ledger_verify
    from audit.models import EvidenceEntry

    migration = importlib.import_module(
        "audit.migrations.0004_evidence_entries_carry_their_organization"
    )
    acme, globex = answers
    with connection.cursor() as cursor:  # entries as the ledger wrote them before
        cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(
            "UPDATE audit_evidenceentry SET organization_id = NULL WHERE record_table <> ALL(%s)",
            # seals came after the backfill: they always carry their organization
            [["citations_queryexecution", "audit_documentevent", "documents_revisionseal"]],
        )
        cursor.execute("SET LOCAL session_replication_role = origin")
    orphaned = EvidenceEntry.objects.filter(organization_id__isnull=True)
    assert orphaned.filter(record_table="citations_retrievalhit").exists()
    with connection.cursor() as cursor:
        cursor.execute(migration.SQL)
    assert not EvidenceEntry.objects.filter(organization_id__isnull=True).exists()
    for execution, org in ((acme, trail.acme), (globex, trail.globex)):
        hits = [str(pk) for pk in execution.hits.values_list("pk", flat=True)]
        assert set(
            EvidenceEntry.objects.filter(record_id__in=hits).values_list(
                "organization_id", flat=True
            )
        ) == {org.pk}
    assert ledger_verify().ok  # the scope column is outside every hash
    with pytest.raises(Exception, match="append-only"), connection.cursor() as cursor:
        cursor.execute("UPDATE audit_evidenceentry SET organization_id = NULL")  # trigger back on


@pytest.mark.parametrize(
    "question",
    [
        '=HYPERLINK("http://evil.example","invoices kept")',
        "+invoices kept",
        "-invoices kept",
        "@SUM(1+1) invoices",
    ],
)
def test_the_csv_export_never_hands_a_spreadsheet_a_formula(trail: Trail, question: str) -> None:
    """A question is anyone's text: a cell starting like a formula opens with a quote,
    while the JSON export keeps the exact question."""
    execution = query_execute(app=trail.acme_app, question=question + " how long?")
    client = _officer(trail.acme)
    exported = {}
    for action in ("export_csv", "export_json"):
        response = client.post(
            "/admin/citations/queryexecution/",
            {"action": action, "_selected_action": [execution.pk]},
        )
        exported[action] = streamed(response).decode()
    rows = list(csv.DictReader(io.StringIO(exported["export_csv"])))
    assert rows and all(row["question"] == "'" + execution.question for row in rows)
    assert all(
        not value.startswith(("=", "+", "-", "@", "\t")) for r in rows for value in r.values()
    )
    assert json.loads(exported["export_json"])[0]["question"] == execution.question


def test_every_later_validation_result_is_explained_to_an_officer() -> None:
    """An older answer reads ``mismatch_index_hash`` after any upload: the page says
    what that means instead of leaving it to alarm the reader."""
    from citations.validation import LATER_MEANINGS, RETURN_CODES, later_meaning

    assert set(LATER_MEANINGS) <= set(RETURN_CODES)
    assert "expected for any older answer" in later_meaning("mismatch_index_hash")
    assert "original bytes stay stored" in later_meaning("revision_mismatch")
    assert later_meaning("bad_offsets").startswith("the recorded citation payload breaks a rule")


def test_retry_skips_files_the_current_converter_refuses_for_good(trail: Trail) -> None:
    from documents import ingestion

    source = trail.handbook.data_source
    refused = factories.upload(source, "locked.md", b"# Locked\n").file
    crashed = factories.upload(source, "crashed.md", b"# Crashed\n").file
    File.objects.filter(pk=refused.pk).update(
        status="failed", error_message="encrypted", refused_by=ingestion.converter_label("markdown")
    )
    File.objects.filter(pk=crashed.pk).update(status="failed", error_message="the parser crashed")
    response = _operator(trail.acme).post(
        "/admin/documents/file/",
        {"action": "retry_failed", "_selected_action": [refused.pk, crashed.pk]},
        follow=True,
    )
    assert "1 file(s) queued again; 1 not: the current converter refuses their bytes" in (
        response.content.decode()
    )
    assert File.objects.get(pk=crashed.pk).status == "pending"
    assert File.objects.get(pk=refused.pk).status == "failed"


def test_search_finds_records_by_the_start_of_their_id_within_the_tenant(
    trail: Trail, answers: tuple[QueryExecution, QueryExecution]
) -> None:
    """Trace lines and lists show ids in part: an officer pastes the first 8 characters."""
    acme, globex = answers
    client = _officer(trail.acme)
    for term in (str(acme.pk)[:8], str(acme.pk)[:13].upper(), f' "{str(acme.pk)[:9]}" '):
        listing = client.get("/admin/citations/queryexecution/", {"q": term})
        assert listing.status_code == 200
        assert f"/admin/citations/queryexecution/{acme.pk}/change/" in listing.content.decode()
    # another organization's answer is never found, whole id or part
    for term in (str(globex.pk), str(globex.pk)[:8]):
        page = client.get("/admin/citations/queryexecution/", {"q": term}).content.decode()
        assert f"/{globex.pk}/change/" not in page and "0 results" in page
    # too short or not hex: no prefix match, and no error
    unrelated = client.get("/admin/citations/queryexecution/", {"q": str(acme.pk)[:7]})
    assert unrelated.status_code == 200 and "0 results" in unrelated.content.decode()
    assert client.get("/admin/citations/queryexecution/", {"q": "zz-' OR 1=1"}).status_code == 200
    # a chain entry by the start of its hash, a file by the start of its id
    from audit.models import EvidenceEntry

    entry = EvidenceEntry.objects.filter(organization_id=trail.acme.pk).first()
    assert entry is not None
    found = client.get("/admin/audit/evidenceentry/", {"q": entry.entry_hash[:10]})
    assert f"/admin/audit/evidenceentry/{entry.pk}/change/" in found.content.decode()
    source = acme.quoted_sources.first()
    assert source is not None
    files = client.get("/admin/documents/file/", {"q": str(source.file_id)[:8]}).content.decode()
    assert f"/admin/documents/file/{source.file_id}/change/" in files
