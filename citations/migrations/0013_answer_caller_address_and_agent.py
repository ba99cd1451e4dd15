"""Answers record where the request came from: the client's address and User-Agent
(``origin`` stays the surface: api, web, thread, …). Runs keep them until their
worker asks the question.

Answers given before have empty fields, which the audit ledger leaves out of their
canonical content (audit.ledger.ADDED_COLUMNS): their chain still verifies. The
defaults are constants, so PostgreSQL adds the columns without rewriting the tables.
A query execution is chained once it completes, so completing it must not change
them either: the complete-once trigger (audit 0006) now says so.
"""

from django.db import migrations, models

# audit 0006's function, with the caller's address and agent frozen as well
COMPLETE_ONCE = """
CREATE OR REPLACE FUNCTION provenance_query_complete_once() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.status = 'running' AND NEW.status IN ('completed', 'failed')
       AND NEW.id = OLD.id
       AND NEW.question = OLD.question AND NEW.app_id = OLD.app_id
       AND NEW.organization_id = OLD.organization_id AND NEW.created_at = OLD.created_at
       AND NEW.caller = OLD.caller{frozen} THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'evidence is append-only: % on % refused', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END $$ LANGUAGE plpgsql;
"""

FROZEN = """
       AND NEW.caller_address IS NOT DISTINCT FROM OLD.caller_address
       AND NEW.caller_user_agent = OLD.caller_user_agent"""


class Migration(migrations.Migration):

    dependencies = [
        ('audit', '0006_refuse_truncate'),
        ('citations', '0012_answer_confidence'),
    ]

    operations = [
        migrations.AddField(
            model_name='queryexecution',
            name='caller_address',
            field=models.GenericIPAddressField(blank=True, help_text="The client's address, as the server saw it.", null=True),
        ),
        migrations.AddField(
            model_name='queryexecution',
            name='caller_user_agent',
            field=models.CharField(blank=True, default='', help_text='The client\'s User-Agent header, or "manage.py <command>".', max_length=500),
        ),
        migrations.AddField(
            model_name='run',
            name='caller_address',
            field=models.GenericIPAddressField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='run',
            name='caller_user_agent',
            field=models.CharField(blank=True, default='', max_length=500),
        ),
        migrations.RunSQL(
            COMPLETE_ONCE.format(frozen=FROZEN),
            reverse_sql=COMPLETE_ONCE.format(frozen=""),
        ),
    ]
