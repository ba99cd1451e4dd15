"""Check or rebuild the full-text postings from the retrievable chunks.

The triggers of migration ``retrieval 0002`` keep the postings equal to the
retrievable chunks' lexemes; statements that bypass triggers (a data-only
restore, logical replication, ``session_replication_role = replica``) do not.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection, transaction

# every posting the retrievable chunks should have (the migration's weight function)
_EXPECTED = """
SELECT c.id AS chunk_id, p.lexeme, c.data_source_id, p.weight
FROM documents_chunk c, retrieval_posting_rows(c.search_vector) AS p
WHERE c.is_retrievable
"""
_DIFFERENCES = (
    "WITH expected AS ("  # noqa: S608 (constant text, no input)
    + _EXPECTED
    + """), stored AS (
    SELECT chunk_id, lexeme, data_source_id, weight FROM retrieval_lexicalposting
)
SELECT (SELECT count(*) FROM (SELECT * FROM expected EXCEPT SELECT * FROM stored) AS missing),
       (SELECT count(*) FROM (SELECT * FROM stored EXCEPT SELECT * FROM expected) AS stray)
"""
)
_REBUILD = (
    "INSERT INTO retrieval_lexicalposting (chunk_id, lexeme, data_source_id, weight)" + _EXPECTED
)


class Command(BaseCommand):
    help = "Compare the full-text postings with the retrievable chunks and rebuild them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--check", action="store_true", help="only compare; fail if they differ"
        )

    def handle(self, *args: object, **options: Any) -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_DIFFERENCES)
            missing, stray = cursor.fetchone()
            summary = f"{missing} postings missing or changed, {stray} stray or outdated"
            if options["check"]:
                if missing or stray:
                    raise CommandError(f"postings differ from the chunks: {summary}")
                self.stdout.write("postings match the retrievable chunks")
                return
            # DELETE, not TRUNCATE: searches keep reading the old postings until commit
            cursor.execute("DELETE FROM retrieval_lexicalposting")
            cursor.execute(_REBUILD)
            self.stdout.write(f"rebuilt {cursor.rowcount} postings (before: {summary})")
