"""Entries made before the chain was keyed keep their plain SHA-256 hashes; a
keyed seal entry appended now chains them under the key (PROVENANCE_AUDIT_KEY),
so the verifier can require every later entry to be keyed. An empty chain needs
no seal."""

from django.db import migrations


def seal(apps, schema_editor) -> None:  # noqa: ANN001
    from audit.keys import audit_key
    from audit.ledger import CHAIN_LOCK_KEY, seal_entry

    entries = apps.get_model("audit", "EvidenceEntry")
    if not entries.objects.exists():
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CHAIN_LOCK_KEY])
    seal_entry(entries, audit_key())


class Migration(migrations.Migration):
    dependencies = [("audit", "0006_refuse_truncate")]

    operations = [migrations.RunPython(seal, reverse_code=migrations.RunPython.noop)]
