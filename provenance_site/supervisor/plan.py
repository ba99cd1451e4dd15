"""What ``make run`` runs: the children, their logs, and how long each may take to stop.

Stopping must end within :data:`STOP_BUDGET_S` (what a process manager is told to
wait before it kills everything, docs/operations.md): the web, beat, worker and any
setup command stop together, then the database; each child's steps are below.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from provenance_site.supervisor.children import ChildSpec, Step
from provenance_site.supervisor.database import STEPS as POSTMASTER_STEPS

STOP_BUDGET_S = 30.0
# a warm shutdown lets the running tasks finish: an embedding task ends its slice
# (PROVENANCE_EMBED_SLICE_SECONDS) and re-queues the rest; then the cold one
# (Celery's SIGQUIT; a second SIGTERM does nothing in Celery 5) cancels what still
# runs, and acks_late puts those messages back on the queue
WORKER_WARM_S, WORKER_COLD_S = 6.0, 6.0
WEB_GRACE_S = 10.0  # gunicorn_conf.graceful_timeout: the master kills its workers then
BEAT_S = 5.0
COMMAND_S = 5.0  # migrate, setup_demo, …: each runs in one transaction or is idempotent
DATABASE_S = 5.0  # pg_ctl stop -m fast: ends the sessions, writes a checkpoint

CELERY = ("-m", "celery", "-A", "provenance_site")


@dataclass(frozen=True)
class Options:
    """Where and how to run; read from the environment ``scripts/run.sh`` sets."""

    root: Path
    var: Path
    port: str
    demo: bool
    database_url: str
    app_database_url: str
    python: str = sys.executable

    @property
    def embedded(self) -> bool:
        return not self.database_url

    @property
    def pgdata(self) -> Path:
        return self.var / "pgdata"


def options_from_env(root: Path, environ: Mapping[str, str]) -> Options:
    from provenance_site.env import env_bool

    var = Path(environ.get("PROVENANCE_VAR_DIR") or root / "var")
    return Options(
        root=root,
        var=var if var.is_absolute() else root / var,
        port=environ.get("PORT") or "8000",
        demo=env_bool("PROVENANCE_RUN_DEMO", True),
        database_url=environ.get("DATABASE_URL", ""),
        app_database_url=environ.get("PROVENANCE_APP_DATABASE_URL", ""),
    )


def database(o: Options) -> ChildSpec:
    return ChildSpec(
        name="database",
        argv=(o.python, "-m", "provenance_site.database_supervisor", "--data-dir", str(o.pgdata)),
        stop=(Step(signal.SIGTERM, DATABASE_S),),
        orphan_signal=signal.SIGTERM,
        log=o.var / "database.log",
    )


def worker(o: Options) -> ChildSpec:
    return ChildSpec(
        name="worker",
        argv=(
            o.python,
            *CELERY,
            "worker",
            "--concurrency",
            "2",
            "--without-mingle",
            "--without-gossip",
            "-l",
            "info",
        ),  # fmt: skip
        stop=(Step(signal.SIGTERM, WORKER_WARM_S), Step(signal.SIGQUIT, WORKER_COLD_S)),
        # no supervisor is left to wait out a warm shutdown: the cold one, at once
        orphan_signal=signal.SIGQUIT,
        log=o.var / "worker.log",
    )


def beat(o: Options) -> ChildSpec:
    """Its own process, never ``worker -B``: a worker started again beside a
    surviving ``-B`` child (or a second ``-B`` worker) would run two schedules."""
    schedule = str(o.var / "celerybeat-schedule")
    return ChildSpec(
        name="beat",
        argv=(o.python, *CELERY, "beat", "--schedule", schedule, "-l", "info"),
        stop=(Step(signal.SIGTERM, BEAT_S),),
        orphan_signal=signal.SIGTERM,
        log=o.var / "beat.log",
    )


def web(o: Options) -> ChildSpec:
    return ChildSpec(
        name="web",
        argv=(
            o.python,
            "-m",
            "gunicorn",
            "-c",
            "provenance_site/gunicorn_conf.py",
            "provenance_site.wsgi:application",
        ),  # fmt: skip
        stop=(Step(signal.SIGTERM, WEB_GRACE_S),),
        orphan_signal=signal.SIGTERM,
    )


def command(o: Options, name: str, *args: str) -> ChildSpec:
    """A ``manage.py`` command run to its end before the next part starts."""
    return ChildSpec(
        name=name,
        argv=(o.python, "manage.py", name, *args),
        stop=(Step(signal.SIGTERM, COMMAND_S),),
        orphan_signal=signal.SIGTERM,
    )


def setup_commands(o: Options) -> list[ChildSpec]:
    """As the owner: the schema, then the application's role and its grants."""
    return [
        command(o, "migrate", "--noinput"),
        command(o, "database_app_role"),
        command(o, "collectstatic", "--noinput", "-v", "0"),
    ]


def demo_commands(o: Options) -> list[ChildSpec]:
    """With the worker running: the demo's documents are ingested as they arrive, and
    the worker evaluates the demo app once its files are ready."""
    if not o.demo:
        return []
    return [command(o, "setup_demo", "--port", o.port), command(o, "setup_demo_evaluation")]


def app_env(o: Options, environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of the worker, beat, web and demo commands: connected as the
    application's role, which owns nothing (the setup commands run as the owner)."""
    env = dict(environ)
    if o.embedded:
        env.setdefault("PROVENANCE_DB_USER", "provenance_app")
    elif o.app_database_url:
        env["DATABASE_URL"] = o.app_database_url
    return env


def stop_budget_s(o: Options) -> float:
    """The longest a stop can take: the slowest of the children stopped together,
    then the database child, then a postmaster that outlived it."""
    together = [worker(o), beat(o), web(o), *setup_commands(o), *demo_commands(o)]
    last = database(o).stop_budget_s + sum(wait for _, wait in POSTMASTER_STEPS)
    return max(spec.stop_budget_s for spec in together) + last
