"""Evaluation runs, items and outcomes are evidence: no row is ever updated (a run's
status and progress are read from the rows appended to it), none is deleted, and
TRUNCATE is refused while a table holds rows. The trigger functions are audit's
(0002: provenance_refuse_change, 0006: provenance_refuse_truncate)."""

from django.db import migrations

TABLES = ["evaluation_evaluationrun", "evaluation_evaluationitem", "evaluation_evaluationoutcome"]

TRIGGERS = "".join(
    f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
    f"FOR EACH ROW EXECUTE FUNCTION provenance_refuse_change();\n"
    f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
    f"FOR EACH STATEMENT EXECUTE FUNCTION provenance_refuse_truncate();\n"
    for table in TABLES
)

DROP = "".join(
    f"DROP TRIGGER IF EXISTS {table}_append_only ON {table};\n"
    f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table};\n"
    for table in TABLES
)


class Migration(migrations.Migration):
    dependencies = [
        ("evaluation", "0001_initial"),
        ("audit", "0006_refuse_truncate"),
    ]

    operations = [migrations.RunSQL(TRIGGERS, reverse_sql=DROP)]
