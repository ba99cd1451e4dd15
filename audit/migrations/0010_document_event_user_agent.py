"""Document events record the client's User-Agent beside its address, and a
retry of a failed file is an event too (a new choice: no SQL).

Events recorded before have an empty agent, which the audit ledger leaves out of
their canonical content (audit.ledger.ADDED_COLUMNS): their chain still verifies.
The column's default is a constant, so PostgreSQL adds it without rewriting the
table; the append-only triggers (row-level UPDATE/DELETE) do not fire.
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('audit', '0009_model_evidence_refuse_truncate'),
    ]

    operations = [
        migrations.AlterField(
            model_name='documentevent',
            name='kind',
            field=models.CharField(choices=[('upload', 'Upload'), ('revision', 'Revision'), ('deletion', 'Deletion'), ('download', 'Download'), ('reconversion', 'Reconversion'), ('cancellation', 'Cancellation'), ('retry', 'Retry')], db_index=True, max_length=20),
        ),
        migrations.AddField(
            model_name='documentevent',
            name='user_agent',
            field=models.CharField(blank=True, default='', help_text='The client\'s User-Agent header, or "manage.py <command>".', max_length=500),
        ),
        migrations.AlterField(
            model_name='documentevent',
            name='origin',
            field=models.GenericIPAddressField(blank=True, help_text="The client's address; empty for a command or a task.", null=True),
        ),
    ]
