"""An app's answer threshold is a probability now, and by default the answer scorer's
fitted one: the old default (0.35 of a hand-weighted relevance) becomes "as fitted"."""

from django.db import migrations, models

OLD_DEFAULT = 0.35


def as_fitted(apps, schema_editor):  # type: ignore[no-untyped-def]
    App = apps.get_model("citations", "App")
    App.objects.filter(answer_threshold=OLD_DEFAULT).update(answer_threshold=None)


class Migration(migrations.Migration):
    dependencies = [("citations", "0015_conversation_deletions")]

    operations = [
        migrations.AlterField(
            model_name="app",
            name="answer_threshold",
            field=models.FloatField(
                blank=True,
                default=None,
                help_text="Below this answer probability the extractive answer quotes nothing; "
                "empty: the answer scorer's fitted threshold.",
                null=True,
            ),
        ),
        migrations.RunPython(as_fitted, migrations.RunPython.noop),
    ]
