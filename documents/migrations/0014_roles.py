"""Roles for members and API keys (core.roles).

Existing members and keys could upload before roles existed: they become
editors, so nothing they did stops working; staff members of the former
"Compliance officer" group become officers. New members and keys default to
viewer. Adds two columns with a constant default: no table rewrite.
"""

from django.db import migrations, models

ROLE_CHOICES = [
    ("viewer", "Viewer — asks and reads"),
    ("editor", "Editor — also uploads, deletes, manages data sources and apps"),
    ("officer", "Compliance officer — reads every answer and its evidence"),
    ("admin", "Administrator — everything, and members and keys"),
]
FORMER_OFFICER_GROUP = "Compliance officer"


def roles_from_before(apps, schema_editor):
    member_model = apps.get_model("documents", "OrganizationMember")
    key_model = apps.get_model("documents", "ApiKey")
    key_model.objects.update(role="editor")
    member_model.objects.update(role="editor")
    member_model.objects.filter(
        user__is_staff=True,
        user__is_superuser=False,
        user__groups__name=FORMER_OFFICER_GROUP,
    ).update(role="officer")


class Migration(migrations.Migration):
    dependencies = [
        ("documents", "0013_chunk_context"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [
        migrations.AddField(
            model_name="organizationmember",
            name="role",
            field=models.CharField(choices=ROLE_CHOICES, default="viewer", max_length=20),
        ),
        migrations.AddField(
            model_name="apikey",
            name="role",
            field=models.CharField(choices=ROLE_CHOICES, default="viewer", max_length=20),
        ),
        migrations.RunPython(roles_from_before, migrations.RunPython.noop),
    ]
