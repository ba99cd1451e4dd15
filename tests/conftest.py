"""Shared fixtures: real PostgreSQL + pgvector (pytest-django's test database on
the embedded server or DATABASE_URL) and a real Celery worker process."""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

import pluggy
import pytest
from pytest_django import DjangoDbBlocker

from tests.support.corpus import CORPUS
from tests.support.worker import WorkerProcess, reset_broker_folder

if TYPE_CHECKING:
    from documents.models import File


@pytest.fixture(scope="session")
def corpus() -> Path:
    assert CORPUS.is_dir(), f"the shared corpus is missing at {CORPUS}"
    return CORPUS


@pytest.fixture(scope="session")
def celery_worker(
    django_db_setup: None, django_db_blocker: DjangoDbBlocker
) -> Iterator[WorkerProcess]:
    """One worker for the session; tests using it need ``transaction=True``."""
    reset_broker_folder()
    worker = WorkerProcess("session")
    worker.start()
    yield worker
    worker.stop()


def wait_for_status(
    file_id: UUID | str, statuses: tuple[str, ...] = ("ready", "failed"), timeout: float = 120
) -> File:
    """Poll a file until its status is one of ``statuses``; returns the row."""
    from documents.models import File

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = File.objects.get(pk=file_id)
        if record.status in statuses:
            return record
        time.sleep(0.2)
    raise AssertionError(f"file {file_id} still {record.status} after {timeout}s")


@pytest.fixture(scope="session", autouse=True)
def _search_threads_closed(django_db_setup: None) -> Iterator[None]:
    """Search threads keep their connections; close them before the test database goes."""
    yield
    from retrieval.search import search_threads_close

    search_threads_close()


def _packages_with_package_fixtures() -> frozenset[str]:
    """Test packages whose conftest defines a package-scoped fixture (the ingested
    library of ``tests/citations``): each is handed to one process as a whole."""
    tests = Path(__file__).resolve().parent
    return frozenset(
        conftest.parent.relative_to(tests.parent).as_posix()
        for conftest in tests.rglob("conftest.py")
        if 'scope="package"' in conftest.read_text()
    )


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadfile``, but a package with a package-scoped fixture is one unit:
    handed out by file, both processes built the library of ``tests/citations``
    (~45-70 s each with fp32 vectors). xdist's own ``loadgroup`` cannot say this
    under pytest 9 (it renames ``item._nodeid``, which no longer sets the id)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    whole = _packages_with_package_fixtures()

    class PackageOrFileScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            package = path.rpartition("/")[0]
            return package if package in whole else path

    return PackageOrFileScheduling(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each package's files together, the package holding a ``long`` test first,
    then the others by their number of tests; in a package, the file with the
    ``long`` test first, then the others by their number of tests.

    ``make test`` hands whole files to its processes in this order
    (``--dist loadfile --no-loadscope-reorder``). A package's files together:
    a package-scoped fixture (the ingested library of ``tests/citations``) is
    torn down whenever a process runs a file of another package, and built
    again, ~16 s each time, when it comes back. The ``long`` test first: left
    for last (xdist's own order, most tests first), the suite's longest test ran
    with the other process idle beside it. The order within a file is kept.
    Every process sorts the same collection the same way, as xdist requires."""
    packages: dict[str, dict[str, list[pytest.Item]]] = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        packages.setdefault(path.rpartition("/")[0], {}).setdefault(path, []).append(item)

    def cost(tests: list[pytest.Item]) -> tuple[bool, int]:
        return (not any(t.get_closest_marker("long") for t in tests), -len(tests))

    def package_cost(files: dict[str, list[pytest.Item]]) -> tuple[bool, int]:
        return cost([item for tests in files.values() for item in tests])

    items[:] = [
        item
        for files in sorted(packages.values(), key=package_cost)
        for tests in sorted(files.values(), key=cost)
        for item in tests
    ]


WORKER_LOG_LINES = 60
_BEAT_TASKS = ("resume_stalled_ingestions", "resume_stalled_runs")  # every 2 s: noise here


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
    """A failed test that used the session worker shows the end of its log (beat's
    sweeps left out): when a file never got ready, what the worker was doing is the
    first thing to read, and CI keeps no artifacts."""
    outcome = yield
    report = outcome.get_result()
    worker = getattr(item, "funcargs", {}).get("celery_worker")
    if report.failed and isinstance(worker, WorkerProcess) and worker.log_path.exists():
        lines = worker.log_path.read_text(errors="replace").splitlines()
        kept = [line for line in lines if not any(task in line for task in _BEAT_TASKS)]
        title = f"worker log ({worker.log_path.name}, last lines)"
        report.sections.append((title, "\n".join(kept[-WORKER_LOG_LINES:])))
