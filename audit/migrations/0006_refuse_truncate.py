"""TRUNCATE fires no row trigger, so it erased evidence with the append-only
triggers on. A statement-level BEFORE TRUNCATE trigger (``{table}_no_truncate``,
calling ``provenance_refuse_truncate()``) on every evidence table refuses it
whenever the table holds rows; truncating an empty table erases nothing (and the
lexical postings test truncates chunks, which cascades into the answer tables).
Apps that add evidence tables add the same trigger in their own migrations;
tests/audit/test_truncate.py checks every table in ``CHAINED_MODELS`` has it.

A query execution's one permitted update is also narrowed: from ``running`` to a
final state (``completed`` by its answer, ``failed`` by its answer or by the
stale-answer sweeper), never to ``running`` again.
"""

from django.db import migrations

REFUSE_TRUNCATE = """
CREATE OR REPLACE FUNCTION provenance_refuse_truncate() RETURNS trigger AS $$
DECLARE
    holds_rows boolean;
BEGIN
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I.%I)', TG_TABLE_SCHEMA, TG_TABLE_NAME)
        INTO holds_rows;
    IF holds_rows THEN
        RAISE EXCEPTION 'evidence is append-only: TRUNCATE on % refused', TG_TABLE_NAME
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
"""

TABLES = [
    "citations_queryexecution",
    "citations_retrievalhit",
    "citations_quotedsource",
    "citations_claimcitation",
    "rag_traces",
    "audit_documentevent",
    "audit_evidenceentry",
]

GUARDS = REFUSE_TRUNCATE + "".join(
    f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
    f"FOR EACH STATEMENT EXECUTE FUNCTION provenance_refuse_truncate();\n"
    for table in TABLES
)

UNDO_GUARDS = "".join(
    f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table};\n" for table in TABLES
) + "DROP FUNCTION IF EXISTS provenance_refuse_truncate();\n"


def _complete_once(final_states: str) -> str:
    return f"""
CREATE OR REPLACE FUNCTION provenance_query_complete_once() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.status = 'running' AND NEW.status IN ({final_states})
       AND NEW.id = OLD.id
       AND NEW.question = OLD.question AND NEW.app_id = OLD.app_id
       AND NEW.organization_id = OLD.organization_id AND NEW.created_at = OLD.created_at
       AND NEW.caller = OLD.caller THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'evidence is append-only: % on % refused', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END $$ LANGUAGE plpgsql;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0005_chain_entries_record_their_key"),
        ("citations", "0005_evidence_survives_callers"),
    ]

    operations = [
        migrations.RunSQL(GUARDS, reverse_sql=UNDO_GUARDS),
        migrations.RunSQL(
            _complete_once("'completed', 'failed'"),
            # as 0002 made it: any status may follow 'running'
            reverse_sql=_complete_once("'running', 'completed', 'failed'"),
        ),
    ]
