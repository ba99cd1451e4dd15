"""The material citations point to is as protected as the evidence that points to
it: the application's role cannot rewrite or erase a published revision's file row,
Markdown, chunks or locations (issue 57, finding 1: it could, and every checker said
OK), and an owner who switches the triggers off is caught by the revision's seal,
which names the chunk."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from pytest_django import DjangoDbBlocker
from rest_framework.test import APIClient

from audit.ledger import ledger_verify
from citations.models import QueryExecution, QuotedSource
from citations.services.execution import query_execute
from core.api_keys import api_key_create
from documents.models import Chunk, DocumentMarkdown, File, Location, RevisionSeal
from tests.audit.conftest import Trail
from tests.support.tamper import triggers_off

pytestmark = pytest.mark.django_db
ROLE = "provenance_app"
QUESTION = "How long are invoices kept?"


@pytest.fixture(scope="module")
def app_role(django_db_setup: None, django_db_blocker: DjangoDbBlocker) -> str:
    """The application's role with its grants, committed (outside any test's
    transaction) so that its own connection can sign in."""
    with django_db_blocker.unblock():
        call_command("database_app_role", role=ROLE)
    return ROLE


@pytest.fixture
def cited(trail: Trail) -> QuotedSource:
    """A chunk of the handbook an answer quotes (committed: the role's connection
    sees only committed rows)."""
    execution = QueryExecution.objects.filter(question=QUESTION).first() or query_execute(
        app=trail.acme_app, question=QUESTION
    )
    source = execution.quoted_sources.select_related("chunk").first()
    assert source is not None and "seven years" in source.chunk.chunk_text
    return source


def _as_role(statement: str, params: Mapping[str, object] | None = None) -> str:
    """Run ``statement`` as the application's role; the error PostgreSQL answers, or ""."""
    settings = {**connection.get_connection_params(), "user": ROLE}
    settings.pop("password", None)
    settings.pop("cursor_factory", None)
    with psycopg.connect(**settings, autocommit=True) as conn:
        try:
            conn.execute(statement, params)
        except psycopg.Error as exc:
            return str(exc)
    return ""


_COPIED = (
    "file_id, markdown_id, organization_id, data_source_id, is_retrievable, vector_database_id,"
    " token_count, content_hash, section, hierarchy, char_start, char_end, line_number_start,"
    " line_number_end, context"
)
REWRITES = {
    # the probe's own statement: a cited figure changed in place
    "chunk text": "UPDATE documents_chunk SET chunk_text = replace(chunk_text, 'seven', 'nine') "
    "WHERE id = %(chunk)s",
    "chunk hash": "UPDATE documents_chunk SET content_hash = md5(content_hash)"
    " WHERE id = %(chunk)s",
    "chunk offsets": "UPDATE documents_chunk SET char_end = char_end + 1 WHERE id = %(chunk)s",
    "chunk context": "UPDATE documents_chunk SET context = 'forged' WHERE id = %(chunk)s",
    "chunk deleted": "DELETE FROM documents_chunk WHERE id = %(chunk)s",
    "chunk added": f"INSERT INTO documents_chunk ({_COPIED}, id, position, chunk_text)"
    f" SELECT {_COPIED}, gen_random_uuid(), position + 10000, 'Invoices are kept one day.'"
    " FROM documents_chunk WHERE id = %(chunk)s",
    "location moved": "UPDATE documents_location SET page_number = 99 WHERE chunk_id = %(chunk)s",
    "location deleted": "DELETE FROM documents_location WHERE chunk_id = %(chunk)s",
    "original's hash": "UPDATE documents_file SET sha256 = md5(sha256) WHERE id = %(file)s",
    "original's key": "UPDATE documents_file SET storage_key = 'elsewhere' WHERE id = %(file)s",
    "file deleted": "DELETE FROM documents_file WHERE id = %(file)s",
    "markdown text": "UPDATE documents_documentmarkdown SET markdown = 'forged'"
    " WHERE file_id = %(file)s",
    "markdown published again": "UPDATE documents_documentmarkdown SET published_at = now()"
    " WHERE file_id = %(file)s",
    "markdown deleted": "DELETE FROM documents_documentmarkdown WHERE file_id = %(file)s",
    "seal rewritten": "UPDATE documents_revisionseal SET chunks = '[]' WHERE file_id = %(file)s",
    "chunks truncated": "TRUNCATE documents_chunk CASCADE",
    "triggers off": "ALTER TABLE documents_chunk DISABLE TRIGGER ALL",
}


@pytest.mark.parametrize("name", REWRITES)
def test_the_application_role_cannot_rewrite_or_erase_a_cited_source(
    name: str, cited: QuotedSource, app_role: str
) -> None:
    before = Chunk.objects.get(pk=cited.chunk_id).chunk_text
    message = _as_role(REWRITES[name], {"chunk": cited.chunk_id, "file": cited.chunk.file_id})
    assert any(
        refusal in message
        for refusal in ("sources are write-once", "append-only", "permission denied", "owner")
    ), message
    assert Chunk.objects.get(pk=cited.chunk_id).chunk_text == before
    assert ledger_verify().ok


def test_the_application_role_still_moves_a_file_through_its_stages(
    cited: QuotedSource, app_role: str
) -> None:
    """What the workers do goes on: status, progress, lease, retrievability."""
    params = {"chunk": cited.chunk_id, "file": cited.chunk.file_id}
    for statement in (
        "UPDATE documents_file SET status = status, progress_done = progress_done,"
        " lease_owner = lease_owner, updated_at = updated_at WHERE id = %(file)s",
        "UPDATE documents_chunk SET is_retrievable = is_retrievable, embedding = embedding"
        " WHERE id = %(chunk)s",
        "UPDATE documents_documentmarkdown SET is_active = is_active WHERE file_id = %(file)s",
    ):
        assert _as_role(statement, params) == "", statement


def test_a_deletion_is_never_taken_back(trail: Trail) -> None:
    with triggers_off():  # a deleted revision, as file_delete leaves it
        File.objects.filter(pk=trail.handbook.pk).update(deleted_at="2026-01-01T00:00:00Z")
    with pytest.raises(Exception, match=r"write-once: UPDATE of documents_file\.deleted_at"):
        File.objects.filter(pk=trail.handbook.pk).update(deleted_at=None)


def _verify_fails(match: str) -> str:
    verdict = ledger_verify()
    assert not verdict.ok
    assert match in verdict.problem, verdict.problem
    with pytest.raises(CommandError, match="audit trail FAILED"):
        call_command("verify_audit_trail", "--no-head")
    return verdict.problem


def test_a_chunk_rewritten_by_the_owner_with_triggers_off_is_named_by_the_verifier(
    cited: QuotedSource, trail: Trail
) -> None:
    assert ledger_verify().ok
    with triggers_off():
        Chunk.objects.filter(pk=cited.chunk_id).update(
            chunk_text=cited.chunk.chunk_text.replace("seven", "nine")
        )
    problem = _verify_fails(f"chunk {cited.chunk_id}")
    assert "no longer hashes to the sealed" in problem
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_create(organization=trail.acme)[1]}")
    response = client.get(
        f"/semantics/apps/{trail.acme_app.pk}/query-executions/{cited.query_id}/validation"
    )
    assert response.status_code == 200
    assert response.json()["result"] == "source_altered"


def test_a_chunk_rewritten_with_its_hash_too_is_still_caught(cited: QuotedSource) -> None:
    forged = cited.chunk.chunk_text.replace("seven", "nine")
    with triggers_off():
        Chunk.objects.filter(pk=cited.chunk_id).update(
            chunk_text=forged, content_hash=hashlib.sha256(forged.encode()).hexdigest()
        )
    _verify_fails(f"chunk {cited.chunk_id}")


@pytest.mark.parametrize(
    ("tamper", "match"),
    [
        (lambda f: File.objects.filter(pk=f).update(sha256="0" * 64), "original's recorded sha256"),
        (
            lambda f: DocumentMarkdown.objects.filter(file=f).update(markdown="# Forged\n"),
            "is not the text that was sealed",
        ),
        (
            lambda f: Location.objects.filter(chunk__file=f).update(page_number=7),
            "locations of its chunks changed",
        ),
        (
            lambda f: RevisionSeal.objects.filter(file=f).update(original_size=1),
            "the record was edited",  # the seal itself is chained
        ),
    ],
    ids=["original hash", "markdown", "locations", "seal"],
)
def test_other_rewrites_by_the_owner_are_caught(trail: Trail, tamper: object, match: str) -> None:
    assert ledger_verify().ok
    with triggers_off():
        tamper(trail.handbook.pk)  # type: ignore[operator]
    _verify_fails(match)


def test_a_chunk_slipped_into_a_sealed_revision_is_caught(cited: QuotedSource) -> None:
    chunk = cited.chunk
    with triggers_off():
        Chunk.objects.create(
            **{
                f.attname: getattr(chunk, f.attname)
                for f in Chunk._meta.concrete_fields
                if f.attname not in {"id", "position", "search_vector"}
            },
            position=9999,
        )
    _verify_fails("was not in the sealed revision")


def test_every_published_revision_is_sealed_and_chained(trail: Trail) -> None:
    published = DocumentMarkdown.objects.filter(published_at__isnull=False)
    assert published.count() >= 2  # the handbook and Globex's rules
    for markdown in published:
        seal = RevisionSeal.objects.get(markdown=markdown)
        chunks = list(markdown.chunks.order_by("position").values_list("pk", "content_hash"))
        assert [(row[0], row[2]) for row in seal.chunks] == [(str(p), h) for p, h in chunks]
        assert seal.original_sha256 == markdown.file.sha256
        assert seal.markdown_sha256 == hashlib.sha256(markdown.markdown.encode()).hexdigest()
