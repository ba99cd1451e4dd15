"""The steps of an answer and what each cites are evidence like the rest of it:
append-only rows (audit 0002's refusing trigger function) that no TRUNCATE can
empty (audit 0006's statement trigger)."""

from django.db import migrations

TABLES = [
    "citations_reasoningstep",
    "citations_stepsourceattribution",
    "citations_stepclaim",
]

TRIGGERS = "".join(
    f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
    f"FOR EACH ROW EXECUTE FUNCTION provenance_refuse_change();\n"
    f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
    f"FOR EACH STATEMENT EXECUTE FUNCTION provenance_refuse_truncate();\n"
    for table in TABLES
)

DROP = "".join(
    f"DROP TRIGGER IF EXISTS {t}_append_only ON {t};\n"
    f"DROP TRIGGER IF EXISTS {t}_no_truncate ON {t};\n"
    for t in TABLES
)


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0006_refuse_truncate"),
        ("citations", "0008_reasoning_steps"),
    ]

    operations = [migrations.RunSQL(TRIGGERS, reverse_sql=DROP)]
