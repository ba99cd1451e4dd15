"""Check or rebuild each index's chunk digest, and so its ``index_hash``.

Every change of what an index can retrieve goes through
``retrieval.services.chunks_retrievable_set``, which updates the digest by the
chunks it changed; statements that bypass it (a bulk load, a data-only
restore, a hand-written UPDATE) leave the digest behind until this runs.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection, transaction

from retrieval.models import VectorDatabase
from retrieval.services import index_digest_recomputed, index_hash_rebuild


class Command(BaseCommand):
    help = "Compare each index's digest with its retrievable chunks and rebuild it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--check", action="store_true", help="only compare; fail if any index differs"
        )
        parser.add_argument(
            "--database", action="append", default=[], metavar="ID", help="only this index"
        )

    def handle(self, *args: object, **options: Any) -> None:
        databases = VectorDatabase.objects.order_by("created_at")
        if options["database"]:
            wanted = set()
            for value in options["database"]:
                try:
                    wanted.add(uuid.UUID(value))
                except ValueError:
                    raise CommandError(f"not an index id: {value!r}") from None
            databases = databases.filter(pk__in=wanted)
            unknown = wanted - set(databases.values_list("pk", flat=True))
            if unknown:
                raise CommandError(f"no such index: {', '.join(sorted(map(str, unknown)))}")
        stale = []
        for database_id, name in databases.values_list("pk", "name"):
            if self._agrees(database_id):
                continue
            stale.append(f"{database_id} ({name})")
            if not options["check"]:
                old = VectorDatabase.objects.values_list("index_hash", flat=True).get(
                    pk=database_id
                )
                new = index_hash_rebuild(database_id=database_id)
                self.stdout.write(f"{database_id} ({name}): {old or '(none)'} -> {new}")
        if options["check"]:
            if stale:
                raise CommandError(
                    f"digest or hash differs from the retrievable chunks: {', '.join(stale)}"
                )
            self.stdout.write("every index's digest and hash match its retrievable chunks")
        elif not stale:
            self.stdout.write("every index's digest and hash already matched its chunks")

    @staticmethod
    def _agrees(database_id: uuid.UUID) -> bool:
        """The stored digest is its chunks' and the hash is the digest's, both read
        in one snapshot: a publish meanwhile is neither missed nor a false alarm,
        and none waits for the recomputation."""
        outer = connection.in_atomic_block  # called from code in a transaction: its snapshot
        with transaction.atomic():
            if not outer:
                with connection.cursor() as cursor:
                    cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            database = VectorDatabase.objects.get(pk=database_id)
            digest = bytes(database.content_digest)
            hash_agrees = database.index_hash == database.hash_of(digest)
            return hash_agrees and digest == index_digest_recomputed(database_id=database_id)
