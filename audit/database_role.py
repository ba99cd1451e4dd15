"""The database role the application runs as: it owns nothing.

Only an owner (or a superuser) can disable a table's triggers, truncate it or drop
it, so an application that connects as the owner could erase its own evidence. The
owner runs migrations; this role gets what the running application needs and no
more: rows of the working tables, and only reading and appending on the evidence
tables (a query execution is also completed once, which its trigger checks); the
sources those cite are never deleted, and their triggers freeze their content.
"""

from __future__ import annotations

import re

from django.apps import apps
from django.db import connection

from audit.ledger import CHAINED_MODELS
from audit.models import EvidenceEntry

DEFAULT_ROLE = "provenance_app"
_ROLE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
# evidence rows that are written once and then completed once (status, answer)
_COMPLETED_ONCE = ("citations.QueryExecution",)
# sources: never deleted (deletion marks them), their content frozen by triggers
# (documents migration 0015); status and progress columns stay the workers' to update
_NEVER_DELETED = ("documents_file", "documents_documentmarkdown", "documents_sourceboxes")


def _evidence_tables() -> dict[str, bool]:
    """Evidence table name -> whether the application may UPDATE it (completion)."""
    tables = {EvidenceEntry._meta.db_table: False}
    for label in CHAINED_MODELS:
        tables[apps.get_model(label)._meta.db_table] = label in _COMPLETED_ONCE
    return tables


def app_role_grant(*, role: str = DEFAULT_ROLE, password: str = "") -> list[str]:
    """Create ``role`` if needed and set its privileges on this database (again after
    every migrate: new tables get nothing until then). Returns the statements run."""
    if not _ROLE_NAME.match(role):
        raise ValueError(f"{role!r} is not a plain role name (lower-case letters, digits, _)")
    quoted = connection.ops.quote_name(role)
    statements = [
        *_role_create(role, quoted, password),
        f"GRANT CONNECT, TEMPORARY ON DATABASE {_database()} TO {quoted}",
        "REVOKE CREATE ON SCHEMA public FROM PUBLIC",
        f"GRANT USAGE ON SCHEMA public TO {quoted}",
        f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {quoted}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {quoted}",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {quoted}",
        f"REVOKE INSERT, UPDATE, DELETE ON django_migrations FROM {quoted}",
        *(f"REVOKE DELETE ON {table} FROM {quoted}" for table in _NEVER_DELETED),
    ]
    for table, completed_once in _evidence_tables().items():
        statements.append(f"REVOKE UPDATE, DELETE ON {table} FROM {quoted}")
        if completed_once:
            statements.append(f"GRANT UPDATE ON {table} TO {quoted}")
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
    return statements


def _database() -> str:
    return connection.ops.quote_name(connection.settings_dict["NAME"])


def _role_create(role: str, quoted: str, password: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role])
        exists = cursor.fetchone() is not None
    options = "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS"
    statements = [] if exists else [f"CREATE ROLE {quoted} {options}"]
    if password:
        with connection.cursor() as cursor:
            cursor.execute("SELECT quote_literal(%s)", [password])
            statements.append(f"ALTER ROLE {quoted} PASSWORD {cursor.fetchone()[0]}")
    return statements


def app_role_owned(role: str) -> int:
    """How many relations ``role`` owns (a correct setup: 0)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner "
            "WHERE r.rolname = %s",
            [role],
        )
        return cursor.fetchone()[0]
