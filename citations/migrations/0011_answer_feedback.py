"""Readers' feedback on answers: evidence, so append-only (audit 0002's refusing
trigger function) and proof against TRUNCATE (audit 0006's), like the other
chained tables."""

import uuid

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

TABLE = "citations_answerfeedback"

TRIGGERS = (
    f"CREATE TRIGGER {TABLE}_append_only BEFORE UPDATE OR DELETE ON {TABLE} "
    f"FOR EACH ROW EXECUTE FUNCTION provenance_refuse_change();\n"
    f"CREATE TRIGGER {TABLE}_no_truncate BEFORE TRUNCATE ON {TABLE} "
    f"FOR EACH STATEMENT EXECUTE FUNCTION provenance_refuse_truncate();\n"
)
DROP = (
    f"DROP TRIGGER IF EXISTS {TABLE}_append_only ON {TABLE};\n"
    f"DROP TRIGGER IF EXISTS {TABLE}_no_truncate ON {TABLE};\n"
)


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0006_refuse_truncate"),
        ("citations", "0010_responses"),
        ("documents", "0012_file_lease_owner"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="AnswerFeedback",
            fields=[
                ("id", models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ("rating", models.CharField(choices=[("helpful", "Helpful"), ("not_helpful", "Not helpful")], max_length=20)),
                ("comment", models.TextField(blank=True, default="")),
                ("caller", models.CharField(blank=True, default="", max_length=200)),
                ("created_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                ("caller_user", models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name="+", to=settings.AUTH_USER_MODEL)),
                ("organization", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="documents.organization")),
                ("query", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="feedback", to="citations.queryexecution")),
            ],
            options={"ordering": ["query", "created_at", "id"]},
        ),
        migrations.RunSQL(TRIGGERS, reverse_sql=DROP),
    ]
