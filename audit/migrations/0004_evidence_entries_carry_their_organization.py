"""Evidence entries of an answer's rows (hits, quoted sources, claims, traces) were
chained without an organization, so an officer's scoped list of the chain showed
only the answers and document events. This fills in the organization of the
answer they belong to.

The entry table is append-only: its trigger is switched off for this one
statement per table and on again in the same transaction. ``organization_id`` is
a scope column outside every hash (``entry_hash`` covers the previous hash, the
table, the record id and the record's content), so the chain verifies as before.
"""

from django.db import migrations

ANSWER_ROWS = ["citations_retrievalhit", "citations_quotedsource", "citations_claimcitation", "rag_traces"]

FILL = "".join(
    f"""
UPDATE audit_evidenceentry AS entry
   SET organization_id = execution.organization_id
  FROM {table} AS row
  JOIN citations_queryexecution AS execution ON execution.id = row.query_id
 WHERE entry.organization_id IS NULL
   AND entry.record_table = '{table}'
   AND entry.record_id = row.id::text;
"""
    for table in ANSWER_ROWS
)

SQL = (
    "ALTER TABLE audit_evidenceentry DISABLE TRIGGER audit_evidenceentry_append_only;\n"
    + FILL
    + "ALTER TABLE audit_evidenceentry ENABLE TRIGGER audit_evidenceentry_append_only;\n"
)


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0003_document_event_reconversion"),
        ("citations", "0005_evidence_survives_callers"),
    ]

    operations = [migrations.RunSQL(SQL, reverse_sql=migrations.RunSQL.noop)]
