"""Test data builders: real rows through the real services."""

from __future__ import annotations

import hashlib
import io
import uuid

from core.api_keys import api_key_create
from documents.models import Chunk, DataSource, DocumentMarkdown, Organization
from documents.uploads import UploadResult, file_upload
from retrieval.services import vector_database_default


def organization(name: str = "Acme") -> Organization:
    return Organization.objects.get_or_create(name=name)[0]


def data_source(org: Organization | None = None, name: str = "Human Resources") -> DataSource:
    org = org or organization()
    return DataSource.objects.get_or_create(
        organization=org,
        name=name,
        defaults={"vector_database": vector_database_default(organization=org)},
    )[0]


def api_key(org: Organization | None = None) -> str:
    return api_key_create(organization=org or organization())[1]


def upload(source: DataSource, name: str, data: bytes) -> UploadResult:
    return file_upload(data_source=source, name=name, stream=io.BytesIO(data))


def chunk_like(template: Chunk, text: str, position: int, **fields: object) -> Chunk:
    """A chunk of ``template``'s file and source holding ``text`` (``fields`` override);
    without the template's context, which describes the template's text. A published
    Markdown takes no new chunk (sources are write-once): it goes into a draft
    conversion of the same file, which retrieval reads like any other."""
    copied = {
        field.attname: getattr(template, field.attname)
        for field in Chunk._meta.concrete_fields
        if field.attname
        not in {"id", "position", "chunk_text", "search_vector", "context", "markdown_id"}
        and not field.generated
    }
    draft = DocumentMarkdown.objects.create(
        file_id=template.file_id,
        converter="test-draft",
        converter_version=uuid.uuid4().hex[:12],
        markdown=text,
        sha256=hashlib.sha256(text.encode()).hexdigest(),
    )
    return Chunk.objects.create(
        **{"markdown_id": draft.pk, **copied, **fields},
        id=uuid.uuid4(),
        position=position,
        chunk_text=text,
    )
