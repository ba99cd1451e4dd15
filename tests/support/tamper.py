"""Rewriting what the database refuses to let anyone rewrite: a test's set-up of a
state the application cannot reach (an old converter version, a vanished original),
or an attack by the owner, who can switch triggers off."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction


@contextmanager
def triggers_off() -> Iterator[None]:
    """Run the block with every trigger off (``session_replication_role = replica``,
    as a superuser or the owner can), in a transaction of its own."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")
        try:
            yield
        finally:
            cursor.execute("SET LOCAL session_replication_role = origin")
