"""The "Compliance officer" group: may view every record, change nothing."""

from django.db import migrations

APPS = ("documents", "retrieval", "citations", "audit")


def create_group(apps, schema_editor):  # noqa: ANN001
    from django.contrib.auth.management import create_permissions

    for config in apps.get_app_configs():
        config.models_module = True
        create_permissions(config, apps=apps, verbosity=0)
        config.models_module = None
    group_model = apps.get_model("auth", "Group")
    permission_model = apps.get_model("auth", "Permission")
    group, _ = group_model.objects.get_or_create(name="Compliance officer")
    views = permission_model.objects.filter(
        content_type__app_label__in=APPS, codename__startswith="view_"
    )
    group.permissions.set(views)


def drop_group(apps, schema_editor):  # noqa: ANN001
    apps.get_model("auth", "Group").objects.filter(name="Compliance officer").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0002_append_only"),
        ("citations", "0005_evidence_survives_callers"),
        ("documents", "0002_initial"),
        ("retrieval", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_group, drop_group)]
