"""Check or rebuild each index's chunk digest, and so its ``index_hash``.

Every change of what an index can retrieve goes through
``retrieval.services.chunks_retrievable_set``, which updates the digest by the
chunks it changed; statements that bypass it (a bulk load, a data-only
restore, a hand-written UPDATE) leave the digest behind until this runs.
"""

from __future__ import annotations

import uuid

from django.core.management.base import BaseCommand, CommandError, CommandParser

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

    def handle(self, *args: object, **options: object) -> None:
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
        for database in databases:
            if bytes(database.content_digest) == index_digest_recomputed(database_id=database.pk):
                continue
            stale.append(database)
            if not options["check"]:
                old = database.index_hash
                new = index_hash_rebuild(database_id=database.pk)
                self.stdout.write(f"{database.pk} ({database.name}): {old} -> {new}")
        if options["check"]:
            if stale:
                names = ", ".join(f"{d.pk} ({d.name})" for d in stale)
                raise CommandError(f"digest differs from the retrievable chunks: {names}")
            self.stdout.write("every index's digest matches its retrievable chunks")
        elif not stale:
            self.stdout.write("every index's digest already matched its retrievable chunks")
