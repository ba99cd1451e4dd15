"""The embedded PostgreSQL's postmaster, whoever started it.

The database child (:mod:`provenance_site.database_supervisor`) stops the server
when it is told to stop. But ``pg_ctl`` starts the postmaster in a session of its
own, outside every child's group, and any process of the application may have
started it (each joins or starts the server under ``var/pgdata``): when the
database child was killed, or the server was started by someone else, the
postmaster would outlive the run. So the supervisor looks for it last.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from pathlib import Path

logger = logging.getLogger("provenance.supervisor")

# PostgreSQL's own meanings: SIGINT a fast shutdown (sessions ended, a checkpoint),
# SIGQUIT an immediate one (crash recovery at the next start), then SIGKILL. Short:
# when the postmaster is still there, a fast shutdown was usually tried already
STEPS = ((signal.SIGINT, 3.0), (signal.SIGQUIT, 2.0), (signal.SIGKILL, 1.0))


def postmaster_pid(data_dir: Path) -> int | None:
    """The pid of a live postmaster serving ``data_dir``, from its ``postmaster.pid``."""
    try:
        pid = int((data_dir / "postmaster.pid").read_text().splitlines()[0])
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, IndexError, ValueError):
        return None
    return pid if b"postgres" in cmdline else None  # not a pid reused by another program


def postmaster_stop(data_dir: Path) -> None:
    """Stop a postmaster still serving ``data_dir``: fast, then immediate, then kill."""
    pid = postmaster_pid(data_dir)
    if pid is None:
        return
    logger.warning("PostgreSQL (pid %d) still serves %s: stopping it", pid, data_dir)
    for signum, wait_s in STEPS:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if postmaster_pid(data_dir) != pid:
                return
            time.sleep(0.1)
