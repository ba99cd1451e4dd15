"""Sweeps re-hashing the stored originals, as append-only evidence (the triggers of
0002 and 0006 on the new table), and the ``integrity`` kind of document event."""


from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('audit', '0010_document_event_user_agent'),
    ]

    operations = [
        migrations.CreateModel(
            name='OriginalsCheck',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('started_at', models.DateTimeField()),
                ('finished_at', models.DateTimeField(db_index=True)),
                ('checked', models.PositiveIntegerField()),
                ('altered', models.JSONField(default=list, help_text='[{file, recorded, actual}]')),
                ('missing', models.JSONField(default=list, help_text='[{file, error}]')),
            ],
            options={
                'ordering': ['-finished_at'],
            },
        ),
        migrations.AlterField(
            model_name='documentevent',
            name='kind',
            field=models.CharField(choices=[('upload', 'Upload'), ('revision', 'Revision'), ('deletion', 'Deletion'), ('download', 'Download'), ('reconversion', 'Reconversion'), ('cancellation', 'Cancellation'), ('retry', 'Retry'), ('integrity', 'Integrity')], db_index=True, max_length=20),
        ),
        migrations.RunSQL(
            "CREATE TRIGGER audit_originalscheck_append_only BEFORE UPDATE OR DELETE ON "
            "audit_originalscheck FOR EACH ROW EXECUTE FUNCTION provenance_refuse_change();\n"
            "CREATE TRIGGER audit_originalscheck_no_truncate BEFORE TRUNCATE ON "
            "audit_originalscheck FOR EACH STATEMENT EXECUTE FUNCTION provenance_refuse_truncate();",
            reverse_sql="DROP TRIGGER IF EXISTS audit_originalscheck_append_only ON audit_originalscheck;"
            "DROP TRIGGER IF EXISTS audit_originalscheck_no_truncate ON audit_originalscheck;",
        ),
    ]
