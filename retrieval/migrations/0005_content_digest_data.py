# Written by hand on 2026-11-26: the data step of 0004, in a transaction of its own.

import hashlib

from django.db import migrations

from retrieval.content_digest import digest_of

# index_hash now covers the chunks' set digest (retrieval/content_digest.py), which
# each change updates, instead of the sorted list of every chunk recomputed on each
# publish. Every index is digested once here; its hash changes form, so answers
# recorded before fail index identity against the live index, as after any change.
# The hash is retrieval.content_digest.index_hash_of's, as of this migration. A
# migration of its own: 0004's column lock is released before the chunks are read
# (~20 s per million chunks); a publish into an index waits only for its row.
# Workers still running older code after this (they rehash the old way, without
# the digest) leave hashes that `manage.py rebuild_index_hash` mends: stop them
# before migrating, or run it once every process runs this code.


def digest_every_index(apps, schema_editor):
    VectorDatabase = apps.get_model("retrieval", "VectorDatabase")
    Chunk = apps.get_model("documents", "Chunk")
    for database in VectorDatabase.objects.all():
        digest = digest_of(
            Chunk.objects.filter(vector_database_id=database.pk, is_retrievable=True)
            .values_list("pk", "content_hash")
            .iterator(chunk_size=5000)
        )
        database.content_digest = digest
        database.index_hash = hashlib.sha256(
            f"{database.embed_model}|{database.analyzer}|".encode() + digest
        ).hexdigest()
        database.save(update_fields=["content_digest", "index_hash"])


def hash_every_index_listed(apps, schema_editor):
    """Back to migration 0003's hash over the sorted list of chunks."""
    schema_editor.execute(
        """
        UPDATE retrieval_vectordatabase d SET index_hash = (
            SELECT encode(sha256(convert_to(
                d.embed_model || '|' || d.analyzer || '|' || coalesce(string_agg(
                    c.id::text || ':' || c.content_hash, ',' ORDER BY c.id), ''), 'UTF8')), 'hex')
            FROM documents_chunk c
            WHERE c.vector_database_id = d.id AND c.is_retrievable
        )
        """
    )


class Migration(migrations.Migration):

    dependencies = [
        ('retrieval', '0004_content_digest'),
    ]

    operations = [
        migrations.RunPython(digest_every_index, hash_every_index_listed),
    ]
