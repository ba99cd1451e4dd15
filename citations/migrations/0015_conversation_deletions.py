"""Conversations get owners and deletions leave evidence.

A thread records who made it (``caller_user``/``caller_api_key``, read by the
roles' reach in core.roles); threads made before are given the owner their
recorded ``caller`` label names (``api-key:<prefix>`` or ``user:<name>``), when
that key or user still exists. Threads, messages and responses are deleted by
marking them (``deleted_at``, ``deleted_by``); each deletion is a
``ConversationDeletion`` row: append-only (audit 0002's refusing trigger
function) and proof against TRUNCATE (audit 0006's), like the other chained
tables."""

import uuid

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

TABLE = "citations_conversationdeletion"

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


def owners_from_labels(apps, schema_editor):
    """Each earlier thread's owner, from the label it recorded (one UPDATE per asker)."""
    Thread = apps.get_model("citations", "Thread")
    ApiKey = apps.get_model("documents", "ApiKey")
    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    labels = Thread.objects.exclude(caller="").values_list("caller", flat=True).distinct()
    for label in labels:
        kind, _, name = label.partition(":")
        threads = Thread.objects.filter(caller=label)
        if kind == "api-key":
            key = ApiKey.objects.filter(prefix=name).first()
            if key is not None:
                threads.filter(organization_id=key.organization_id).update(caller_api_key=key)
        elif kind == "user":
            user = User.objects.filter(username=name).first()
            if user is not None:
                threads.update(caller_user=user)


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0006_refuse_truncate"),
        ("citations", "0014_model_wire_fallback_alignment"),
        ("documents", "0014_roles"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="message",
            name="deleted_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="message",
            name="deleted_by",
            field=models.CharField(blank=True, default="", max_length=200),
        ),
        migrations.AddField(
            model_name="responserecord",
            name="deleted_by",
            field=models.CharField(blank=True, default="", max_length=200),
        ),
        migrations.AddField(
            model_name="thread",
            name="caller_api_key",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to="documents.apikey"),
        ),
        migrations.AddField(
            model_name="thread",
            name="caller_user",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name="thread",
            name="deleted_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="thread",
            name="deleted_by",
            field=models.CharField(blank=True, default="", max_length=200),
        ),
        migrations.RunPython(owners_from_labels, migrations.RunPython.noop),
        migrations.CreateModel(
            name="ConversationDeletion",
            fields=[
                ("id", models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ("kind", models.CharField(choices=[("thread", "Thread"), ("message", "Message"), ("response", "Response")], max_length=20)),
                ("record_id", models.UUIDField(db_index=True, help_text="The thread, message or response.")),
                ("thread_id", models.UUIDField(blank=True, help_text="A message's thread.", null=True)),
                ("actor", models.CharField(help_text="Who, as recorded at the time.", max_length=200)),
                ("actor_user_id", models.IntegerField(blank=True, null=True)),
                ("actor_api_key_id", models.BigIntegerField(blank=True, null=True)),
                ("role", models.CharField(help_text="The role the actor acted with.", max_length=20)),
                ("origin", models.GenericIPAddressField(blank=True, help_text="The client's address, as the server saw it.", null=True)),
                ("user_agent", models.CharField(blank=True, default="", max_length=500)),
                ("reason", models.TextField(blank=True, default="")),
                ("created_at", models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                ("organization", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="documents.organization")),
            ],
            options={"ordering": ["-created_at"]},
        ),
        migrations.RunSQL(TRIGGERS, reverse_sql=DROP),
    ]
