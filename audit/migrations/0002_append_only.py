"""Evidence is append-only, enforced by the database for every role that
does not switch triggers off (which only a superuser can, and which the hash
chain then exposes)."""

from django.db import migrations

REFUSE = """
CREATE OR REPLACE FUNCTION provenance_refuse_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'evidence is append-only: % on % refused', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END $$ LANGUAGE plpgsql;

-- a query execution is written as 'running' and completed once; then it is frozen
CREATE OR REPLACE FUNCTION provenance_query_complete_once() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.status = 'running' AND NEW.id = OLD.id
       AND NEW.question = OLD.question AND NEW.app_id = OLD.app_id
       AND NEW.organization_id = OLD.organization_id AND NEW.created_at = OLD.created_at
       AND NEW.caller = OLD.caller THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'evidence is append-only: % on % refused', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END $$ LANGUAGE plpgsql;

CREATE TRIGGER query_execution_append_only BEFORE UPDATE OR DELETE ON citations_queryexecution
    FOR EACH ROW EXECUTE FUNCTION provenance_query_complete_once();
"""

TABLES = [
    "citations_retrievalhit",
    "citations_quotedsource",
    "citations_claimcitation",
    "rag_traces",
    "audit_evidenceentry",
    "audit_documentevent",
]

TRIGGERS = REFUSE + "".join(
    f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
    f"FOR EACH ROW EXECUTE FUNCTION provenance_refuse_change();\n"
    for table in TABLES
)

DROP = "".join(f"DROP TRIGGER IF EXISTS {t}_append_only ON {t};\n" for t in TABLES) + """
DROP TRIGGER IF EXISTS query_execution_append_only ON citations_queryexecution;
DROP FUNCTION IF EXISTS provenance_query_complete_once();
DROP FUNCTION IF EXISTS provenance_refuse_change();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0001_initial"),
        ("citations", "0003_answer_defaults"),
    ]

    operations = [migrations.RunSQL(TRIGGERS, reverse_sql=DROP)]
