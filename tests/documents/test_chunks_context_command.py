"""``manage.py chunks_context``: the files whose chunks predate contexts are listed
(``--dry-run``) or queued for a new ingestion, and no other file is touched."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from audit.models import DocumentEvent
from documents.management.commands.chunks_context import REASON
from documents.models import Chunk, File, FileStatus
from tests import factories
from tests.support.tamper import triggers_off
from tests.web.conftest import ingest_now

pytestmark = pytest.mark.django_db


def _run(*args: str) -> str:
    out = StringIO()
    call_command("chunks_context", *args, stdout=out)
    return out.getvalue()


def test_it_requeues_only_the_files_whose_chunks_have_no_context() -> None:
    source = factories.data_source(factories.organization("Acme"), "Policies")
    old, new = (
        ingest_now(factories.upload(source, name, b"# Retention\n\nInvoices are kept.\n").file)
        for name in ("old.md", "new.md")
    )
    assert old.status == new.status == FileStatus.READY
    assert not Chunk.objects.filter(file__in=[old, new], context="").exists()
    with triggers_off():
        Chunk.objects.filter(file=old).update(context="")  # as chunks made before contexts

    assert _run("--dry-run").split() == [str(old.pk), "old.md"]
    assert _run("--dry-run", "--organization", "Globex") == ""
    assert File.objects.get(pk=old.pk).status == FileStatus.READY  # a dry run changes nothing

    assert "1 file(s) queued" in _run()
    assert File.objects.get(pk=old.pk).status == FileStatus.PENDING
    assert File.objects.get(pk=new.pk).status == FileStatus.READY
    event = DocumentEvent.objects.get(file=old, kind="reconversion")
    assert event.reason == REASON
