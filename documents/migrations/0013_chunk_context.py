# Written by hand (Django cannot alter a generated column, so it is dropped and added
# again, as in 0006): rewrites the chunk table and rebuilds its indexes, HNSW included,
# under an exclusive lock.
"""A chunk's context (the record it belongs to) is indexed with its text.

Existing chunks get an empty context, so their lexemes, postings and vectors are
unchanged: they gain a context when their file is converted again (``reconvert``)
or by ``manage.py chunks_context`` (which also embeds them again).
"""

import django.contrib.postgres.search
from django.db import migrations, models

# documents/fulltext.py's SCRIPT_BOUNDARY and CONTEXT_LABELS as of this migration
SCRIPT_BOUNDARY = '(?<=[\\u0590-\\u08ff\\u0e00-\\u0eff\\u1000-\\u109f\\u1100-\\u11ff\\u1780-\\u17ff\\u3000-\\u30ff\\u3130-\\u318f\\u31f0-\\u31ff\\u3400-\\u4dbf\\u4e00-\\u9fff\\uac00-\\ud7af\\uf900-\\ufaff\\ufb1d-\\ufdff\\ufe70-\\ufefc\\uff65-\\uff9f\\U00020000-\\U0003134f])(?=[^\\u0590-\\u08ff\\u0e00-\\u0eff\\u1000-\\u109f\\u1100-\\u11ff\\u1780-\\u17ff\\u3000-\\u30ff\\u3130-\\u318f\\u31f0-\\u31ff\\u3400-\\u4dbf\\u4e00-\\u9fff\\uac00-\\ud7af\\uf900-\\ufaff\\ufb1d-\\ufdff\\ufe70-\\ufefc\\uff65-\\uff9f\\U00020000-\\U0003134f\\s])|(?<=[^\\u0590-\\u08ff\\u0e00-\\u0eff\\u1000-\\u109f\\u1100-\\u11ff\\u1780-\\u17ff\\u3000-\\u30ff\\u3130-\\u318f\\u31f0-\\u31ff\\u3400-\\u4dbf\\u4e00-\\u9fff\\uac00-\\ud7af\\uf900-\\ufaff\\ufb1d-\\ufdff\\ufe70-\\ufefc\\uff65-\\uff9f\\U00020000-\\U0003134f\\s])(?=[\\u0590-\\u08ff\\u0e00-\\u0eff\\u1000-\\u109f\\u1100-\\u11ff\\u1780-\\u17ff\\u3000-\\u30ff\\u3130-\\u318f\\u31f0-\\u31ff\\u3400-\\u4dbf\\u4e00-\\u9fff\\uac00-\\ud7af\\uf900-\\ufaff\\ufb1d-\\ufdff\\ufe70-\\ufefc\\uff65-\\uff9f\\U00020000-\\U0003134f])'
CONTEXT_LABELS = "^(?:Document|Section|Page|Record|Columns): "

# the postings follow a chunk's search_vector: a change of its context writes them again
POSTINGS_UPDATE = """
DROP TRIGGER chunk_postings_update ON documents_chunk;
CREATE TRIGGER chunk_postings_update
    AFTER UPDATE OF is_retrievable, chunk_text, context, data_source_id, id ON documents_chunk
    FOR EACH ROW WHEN (
        OLD.is_retrievable IS DISTINCT FROM NEW.is_retrievable
        OR (NEW.is_retrievable AND (
            OLD.chunk_text IS DISTINCT FROM NEW.chunk_text
            OR OLD.context IS DISTINCT FROM NEW.context
            OR OLD.data_source_id IS DISTINCT FROM NEW.data_source_id
            OR OLD.id IS DISTINCT FROM NEW.id))
    )
    EXECUTE FUNCTION retrieval_postings_sync();
"""
POSTINGS_UPDATE_UNDO = """
DROP TRIGGER chunk_postings_update ON documents_chunk;
CREATE TRIGGER chunk_postings_update
    AFTER UPDATE OF is_retrievable, chunk_text, data_source_id, id ON documents_chunk
    FOR EACH ROW WHEN (
        OLD.is_retrievable IS DISTINCT FROM NEW.is_retrievable
        OR (NEW.is_retrievable AND (
            OLD.chunk_text IS DISTINCT FROM NEW.chunk_text
            OR OLD.data_source_id IS DISTINCT FROM NEW.data_source_id
            OR OLD.id IS DISTINCT FROM NEW.id))
    )
    EXECUTE FUNCTION retrieval_postings_sync();
"""


# documents.Chunk.search_vector as of this migration: the text, then the unlabelled context
INDEXED_TEXT = models.Func(
    models.F('chunk_text'),
    models.Func(models.F('context'), models.Value(CONTEXT_LABELS), models.Value(''), models.Value('gn'), function='regexp_replace', output_field=models.TextField()),
    template='(%(expressions)s)', arg_joiner=" || ' ' || ", output_field=models.TextField(),
)


class Migration(migrations.Migration):

    dependencies = [
        ('documents', '0012_file_lease_owner'),
        ('retrieval', '0005_content_digest_data'),
    ]

    operations = [
        migrations.RemoveField(model_name='chunk', name='search_vector'),
        migrations.AddField(
            model_name='chunk',
            name='context',
            field=models.TextField(blank=True, default=''),
        ),
        migrations.AddField(
            model_name='chunk',
            name='search_vector',
            field=models.GeneratedField(db_persist=True, expression=django.contrib.postgres.search.SearchVector(models.Func(INDEXED_TEXT, models.Value(SCRIPT_BOUNDARY), models.Value(' '), models.Value('g'), function='regexp_replace', output_field=models.TextField()), config='english'), output_field=django.contrib.postgres.search.SearchVectorField()),
        ),
        migrations.RunSQL(POSTINGS_UPDATE, POSTINGS_UPDATE_UNDO),
        # the new column has no statistics until analyzed (search.py reads them)
        migrations.RunSQL("ANALYZE documents_chunk", migrations.RunSQL.noop),
    ]
