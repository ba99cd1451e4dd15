"""Django's ``flush``, which the evidence tables' TRUNCATE triggers refuse.

Everywhere but the test settings this is Django's command unchanged, so evidence
cannot be flushed away. The test suite empties its database between packages;
with ``PROVENANCE_TEST_FLUSH_EVIDENCE`` the flush runs with triggers off (as the
superuser the tests connect as) and removes the exported chain heads too, since
the chain they point into is gone.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.commands import flush
from django.db import connections

from audit.heads import audit_heads_clear, head_exports_paused


class Command(flush.Command):
    def handle(self, **options: Any) -> None:
        if not getattr(settings, "PROVENANCE_TEST_FLUSH_EVIDENCE", False):
            return super().handle(**options)
        connection = connections[str(options["database"])]
        with head_exports_paused():
            with connection.cursor() as cursor:
                cursor.execute("SET session_replication_role = replica")
            try:
                super().handle(**options)
            finally:
                with connection.cursor() as cursor:
                    cursor.execute("SET session_replication_role = DEFAULT")
            audit_heads_clear()
        return None
