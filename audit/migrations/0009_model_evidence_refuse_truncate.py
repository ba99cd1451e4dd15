"""The model evidence tables (model calls, claim checks) joined the chain after
0006 guarded the others against TRUNCATE: the same guard on them."""

from django.db import migrations

TABLES = ["citations_modelcall", "citations_claimcheck"]

GUARDS = "".join(
    f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
    f"FOR EACH STATEMENT EXECUTE FUNCTION provenance_refuse_truncate();\n"
    for table in TABLES
)

UNDO = "".join(f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table};\n" for table in TABLES)


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0008_document_event_cancellation"),
        ("citations", "0007_model_evidence_append_only"),
    ]

    operations = [migrations.RunSQL(GUARDS, reverse_sql=UNDO)]
