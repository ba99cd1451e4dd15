"""The model evidence of an answer (calls and claim checks) is append-only like the
rest of it: the refusing trigger function of audit 0002 on the two new tables."""

from django.db import migrations

TABLES = ["citations_modelcall", "citations_claimcheck"]

TRIGGERS = "".join(
    f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
    f"FOR EACH ROW EXECUTE FUNCTION provenance_refuse_change();\n"
    for table in TABLES
)

DROP = "".join(f"DROP TRIGGER IF EXISTS {t}_append_only ON {t};\n" for t in TABLES)


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0002_append_only"),
        ("citations", "0006_llm_generators"),
    ]

    operations = [migrations.RunSQL(TRIGGERS, reverse_sql=DROP)]
