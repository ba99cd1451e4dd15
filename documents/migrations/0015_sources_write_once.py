# ruff: noqa: S608, E501 -- SQL built from this file's constant column lists; long trigger lines
"""Sources as immutable as the evidence that cites them.

A file revision, its published Markdown, that Markdown's chunks and their
locations are write-once for every role that does not switch triggers off (only
the owner can, and the revision's seal in the hash chain then shows the edit):

- ``documents_file``: content columns never change; of the working columns
  ``superseded_at`` and ``deleted_at`` (with ``deletion_reason``) are set once and
  never taken back; an uploader's user or key may only become NULL (their account
  or key deleted). Rows are never deleted: deletion marks.
- ``documents_documentmarkdown``: a draft (``published_at`` NULL) is a working row
  the ingestion rewrites on a retry; once published its content and publication
  time are frozen, and only ``is_active`` changes (a newer conversion published).
- ``documents_chunk`` and ``documents_location``: frozen once their Markdown is
  published, none added to it (chunks keep ``is_retrievable`` and ``embedding``: an
  index's state, not what is cited); a draft's may be deleted by a retry of the
  chunk stage.
- ``documents_sourceboxes``: a published Markdown's spans are frozen and its page
  words only cleared (a draft's are rewritten by a retry of its conversion).
- ``documents_revisionseal``: append-only evidence.

TRUNCATE of any of them is refused while it holds rows (0006's function).
"""

import uuid

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models
from django.db.migrations.operations.base import Operation

REFUSED = "RAISE EXCEPTION 'sources are write-once: % of %.% refused', TG_OP, TG_TABLE_NAME, {column} USING ERRCODE = 'insufficient_privilege';"

FILE_CONTENT = [
    "id",
    "document_id",
    "organization_id",
    "data_source_id",
    "name",
    "kind",
    "content_type",
    "size",
    "sha256",
    "storage_key",
    "revision",
    "created_at",
]
MARKDOWN_CONTENT = [
    "id",
    "file_id",
    "converter",
    "converter_version",
    "markdown",
    "sha256",
    "line_pages",
    "front_matter",
    "body_start",
    "page_count",
    "metadata",
    "created_at",
]
CHUNK_CONTENT = [
    "id",
    "file_id",
    "markdown_id",
    "organization_id",
    "data_source_id",
    "vector_database_id",
    "position",
    "chunk_text",
    "token_count",
    "content_hash",
    "section",
    "hierarchy",
    "char_start",
    "char_end",
    "line_number_start",
    "line_number_end",
    "page_start",
    "page_end",
    "context",
]
LOCATION_CONTENT = [
    "id",
    "chunk_id",
    "ordinal",
    "line_number_start",
    "line_number_end",
    "char_start",
    "char_end",
    "hierarchy",
    "page_number",
    "boxes",
]


def _changed(columns: list[str]) -> str:
    """The first of ``columns`` an UPDATE changes, into ``changed``."""
    return "\n".join(
        f"    IF changed IS NULL AND NEW.{c} IS DISTINCT FROM OLD.{c} THEN changed := '{c}'; END IF;"
        for c in columns
    )


def _function(name: str, body: str) -> str:
    return f"""
CREATE OR REPLACE FUNCTION {name}() RETURNS trigger AS $$
DECLARE
    changed text;
BEGIN
{body}
END $$ LANGUAGE plpgsql;
"""


def _refuse(column: str) -> str:
    return REFUSED.format(column=column)


FILE = _function(
    "provenance_file_write_once",
    f"""
    IF TG_OP = 'DELETE' THEN {_refuse("'*'")} END IF;
{_changed(FILE_CONTENT)}
    IF changed IS NULL AND OLD.superseded_at IS NOT NULL
       AND NEW.superseded_at IS DISTINCT FROM OLD.superseded_at THEN changed := 'superseded_at'; END IF;
    IF changed IS NULL AND OLD.deleted_at IS NOT NULL
       AND NEW.deleted_at IS DISTINCT FROM OLD.deleted_at THEN changed := 'deleted_at'; END IF;
    IF changed IS NULL AND OLD.deleted_at IS NOT NULL
       AND NEW.deletion_reason IS DISTINCT FROM OLD.deletion_reason THEN changed := 'deletion_reason'; END IF;
    IF changed IS NULL AND NEW.uploaded_by_id IS NOT NULL
       AND NEW.uploaded_by_id IS DISTINCT FROM OLD.uploaded_by_id THEN changed := 'uploaded_by_id'; END IF;
    IF changed IS NULL AND NEW.uploaded_with_key_id IS NOT NULL
       AND NEW.uploaded_with_key_id IS DISTINCT FROM OLD.uploaded_with_key_id THEN changed := 'uploaded_with_key_id'; END IF;
    IF changed IS NOT NULL THEN {_refuse("changed")} END IF;
    RETURN NEW;""",
)

MARKDOWN = _function(
    "provenance_markdown_write_once",
    f"""
    IF TG_OP = 'DELETE' THEN {_refuse("'*'")} END IF;
    IF OLD.published_at IS NULL THEN RETURN NEW; END IF;
{_changed([*MARKDOWN_CONTENT, "published_at"])}
    IF changed IS NOT NULL THEN {_refuse("changed")} END IF;
    RETURN NEW;""",
)

# a chunk's (and a location's) Markdown published: frozen; a draft's: a retry may redo it
_PUBLISHED = "EXISTS (SELECT 1 FROM documents_documentmarkdown m WHERE m.id = {markdown} AND m.published_at IS NOT NULL)"

CHUNK = _function(
    "provenance_chunk_write_once",
    f"""
    IF TG_OP = 'INSERT' THEN
        IF {_PUBLISHED.format(markdown="NEW.markdown_id")} THEN {_refuse("'*'")} END IF;
        RETURN NEW;
    END IF;
    IF TG_OP = 'DELETE' THEN
        IF {_PUBLISHED.format(markdown="OLD.markdown_id")} THEN {_refuse("'*'")} END IF;
        RETURN OLD;
    END IF;
{_changed(CHUNK_CONTENT)}
    IF changed IS NOT NULL AND {_PUBLISHED.format(markdown="OLD.markdown_id")} THEN {_refuse("changed")} END IF;
    RETURN NEW;""",
)

LOCATION = _function(
    "provenance_location_write_once",
    f"""
    IF TG_OP = 'INSERT' THEN
        IF {_PUBLISHED.format(markdown="(SELECT c.markdown_id FROM documents_chunk c WHERE c.id = NEW.chunk_id)")} THEN {_refuse("'*'")} END IF;
        RETURN NEW;
    END IF;
    IF {_PUBLISHED.format(markdown="(SELECT c.markdown_id FROM documents_chunk c WHERE c.id = OLD.chunk_id)")} THEN
        IF TG_OP = 'DELETE' THEN {_refuse("'*'")} END IF;
{_changed(LOCATION_CONTENT)}
        IF changed IS NOT NULL THEN {_refuse("changed")} END IF;
    END IF;
    IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
    RETURN NEW;""",
)

BOXES = _function(
    "provenance_boxes_write_once",
    f"""
    IF TG_OP = 'DELETE' THEN {_refuse("'*'")} END IF;
    IF NOT {_PUBLISHED.format(markdown="OLD.markdown_id")} THEN RETURN NEW; END IF;
{_changed(["id", "markdown_id", "spans"])}
    IF changed IS NULL AND NEW.page_words IS NOT NULL
       AND NEW.page_words IS DISTINCT FROM OLD.page_words THEN changed := 'page_words'; END IF;
    IF changed IS NOT NULL THEN {_refuse("changed")} END IF;
    RETURN NEW;""",
)

# chunks and locations are also refused INSERT into a published Markdown
INSERTS_CHECKED = ("documents_chunk", "documents_location")

TRIGGERS = {
    "documents_file": "provenance_file_write_once",
    "documents_documentmarkdown": "provenance_markdown_write_once",
    "documents_chunk": "provenance_chunk_write_once",
    "documents_location": "provenance_location_write_once",
    "documents_sourceboxes": "provenance_boxes_write_once",
    "documents_revisionseal": "provenance_refuse_change",
}


def _write_once() -> list[Operation]:
    create = (
        FILE
        + MARKDOWN
        + CHUNK
        + LOCATION
        + BOXES
        + "".join(
            f"CREATE TRIGGER {table}_write_once BEFORE "
        f"{'INSERT OR ' if table in INSERTS_CHECKED else ''}UPDATE OR DELETE ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION {function}();\n"
            f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION provenance_refuse_truncate();\n"
            for table, function in TRIGGERS.items()
        )
    )
    drop = "".join(
        f"DROP TRIGGER IF EXISTS {table}_write_once ON {table};\n"
        f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table};\n"
        for table in TRIGGERS
    ) + "".join(
        f"DROP FUNCTION IF EXISTS {function}();\n"
        for function in TRIGGERS.values()
        if function != "provenance_refuse_change"
    )
    return [migrations.RunSQL(create, reverse_sql=drop)]


class Migration(migrations.Migration):
    dependencies = [
        ("documents", "0014_roles"),
        # provenance_refuse_change() and provenance_refuse_truncate()
        ("audit", "0010_document_event_user_agent"),
    ]

    operations = [
        migrations.CreateModel(
            name="RevisionSeal",
            fields=[
                (
                    "id",
                    models.UUIDField(
                        default=uuid.uuid4, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("original_sha256", models.CharField(max_length=64)),
                ("original_size", models.BigIntegerField()),
                ("markdown_sha256", models.CharField(max_length=64)),
                ("chunks", models.JSONField(default=list)),
                ("locations_digest", models.CharField(max_length=64)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "file",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="seals",
                        to="documents.file",
                    ),
                ),
                (
                    "markdown",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="seal",
                        to="documents.documentmarkdown",
                    ),
                ),
                (
                    "organization",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="documents.organization",
                    ),
                ),
            ],
            options={
                "ordering": ["created_at"],
            },
        ),
        *_write_once(),
    ]
