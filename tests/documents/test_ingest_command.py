"""`manage.py ingest` and `manage.py create_api_key`: messages and exit status."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from core.api_keys import api_key_verify
from documents.models import DataSource, File
from tests import factories

pytestmark = pytest.mark.django_db


def _ingest(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("ingest", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_queues_files_and_creates_the_data_source(corpus: Path) -> None:
    factories.organization("Acme")
    out, _ = _ingest(str(corpus / "docling/md"), "--data-source", "Docs")
    assert "created data source 'Docs' in Acme" in out
    names = set(File.objects.values_list("name", flat=True))
    assert {"duck.md", "blocks.md", "mixed_without_h1.md"} <= names
    assert not any(n.endswith(".json") for n in names) or "escaped_characters.md.json" in names
    assert DataSource.objects.get(name="Docs").vector_database.embed_model.endswith("MiniLM-L6-v2")


def test_rejected_files_are_reported_and_the_exit_status_is_nonzero(
    corpus: Path, tmp_path: Path
) -> None:
    factories.organization("Acme")
    empty = tmp_path / "empty.md"
    empty.write_bytes(b"")
    with pytest.raises(CommandError, match="2 file"):
        call_command(
            "ingest",
            str(empty),
            str(corpus / "hostile/markitdown/random.bin"),
            str(corpus / "docling/md/duck.md"),
            "--data-source",
            "Docs",
            stdout=StringIO(),
            stderr=(err := StringIO()),
        )
    assert "rejected  " in err.getvalue() and "the file is empty" in err.getvalue()
    assert File.objects.filter(name="duck.md").count() == 1


def test_missing_path_and_unknown_organization_are_clear_errors(tmp_path: Path) -> None:
    factories.organization("Acme")
    with pytest.raises(CommandError, match="no such file or folder"):
        _ingest(str(tmp_path / "missing.md"), "--data-source", "Docs")
    with pytest.raises(CommandError, match="unknown organization 'Nope'"):
        _ingest(str(tmp_path), "--data-source", "Docs", "--organization", "Nope")
    factories.organization("Globex")
    with pytest.raises(CommandError, match="--organization is required"):
        _ingest(str(tmp_path), "--data-source", "Docs")


def test_create_api_key_prints_a_working_key_once() -> None:
    org = factories.organization("Acme")
    out = StringIO()
    call_command("create_api_key", "--organization", "Acme", stdout=out)
    key = out.getvalue().strip()
    verified = api_key_verify(presented=key)
    assert verified is not None and verified.organization == org
    with pytest.raises(CommandError, match="unknown organization"):
        call_command("create_api_key", "--organization", "Nope", stdout=StringIO())
