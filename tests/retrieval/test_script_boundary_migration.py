"""documents 0006 re-indexes chunks with the script-boundary rule: a Latin word set
against Arabic letters becomes searchable on its own once migrated, stops being so
when the migration is undone, the postings follow the column both ways, and the
new column has statistics at once. retrieval 0003 renames the analyzer and so
changes every index hash, and back; retrieval 0005 digests every index again."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection

from documents.fulltext import ANALYZER
from documents.models import DataSource
from retrieval import search
from retrieval.services import index_hash_rebuild
from tests import factories
from tests.conftest import wait_for_status
from tests.support.worker import WorkerProcess

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

# as in the corpus's right_to_left_01.pdf: the Arabic "and" against "Python"
DOCUMENT = "# البرمجة\n\nيمكن للمبرمجين استخدام R وPython لتنفيذ عمليات تحليلية متقدمة.\n"


def _found(source: DataSource, question: str) -> set:
    params = search.statement_params(
        organization_id=source.organization_id,
        data_source_ids=[source.pk],
        question=question,
        candidate_k=40,
        top_k=10,
        analyzer=ANALYZER,
    )
    return {row[0] for row in search.lexical_rows(params)}


def test_the_migration_reindexes_existing_chunks_both_ways(celery_worker: WorkerProcess) -> None:
    source = factories.data_source()
    record = factories.upload(source, "arabic.md", DOCUMENT.encode()).file
    assert wait_for_status(record.pk).status == "ready"
    (chunk_id,) = record.chunks.values_list("pk", flat=True)
    assert _found(source, "Python") == {chunk_id}
    database = source.vector_database
    database.refresh_from_db()
    assert database.analyzer == ANALYZER == "english+spaced-scripts"
    current_hash = database.index_hash
    try:
        call_command("migrate", "documents", "0005", verbosity=0)
        assert _found(source, "Python") == set()
        call_command("rebuild_postings", "--check")
        # no digest column before retrieval 0004
        database.refresh_from_db(fields=["analyzer", "index_hash"])
        assert database.analyzer == "english"
        assert database.index_hash != current_hash
    finally:
        call_command("migrate", verbosity=0)
    assert _found(source, "Python") == {chunk_id}
    call_command("rebuild_postings", "--check")
    database.refresh_from_db()
    assert (database.analyzer, database.index_hash) == (ANALYZER, current_hash)
    # retrieval 0005 digests the index as the running digest does
    assert index_hash_rebuild(database_id=database.pk) == current_hash
    with connection.cursor() as cursor:  # the common lexemes' shares come from these
        cursor.execute(
            "SELECT count(*) FROM pg_stats"
            " WHERE tablename = 'documents_chunk' AND attname = 'search_vector'"
        )
        assert cursor.fetchone() == (1,), "the re-added column is analyzed"
