"""Answers whose database connection dies mid-way are left ``running`` with nothing
recorded; the worker's beat sweeper fails and chains them, an answer that finishes
after its sweep cannot overwrite it, and the trail then verifies (chain, exported
head, nothing stuck)."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from io import StringIO

import psycopg
import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection

from audit.heads import head_latest
from audit.ledger import ledger_verify
from audit.models import EvidenceEntry
from citations.llm_apps import app_create
from citations.models import App, QueryExecution, QueryStatus, QuotedSource, RetrievalHit
from citations.services import query_execute
from citations.services.abandoning import QueryAbandoned, query_executions_sweep_stale
from tests import factories
from tests.audit.conftest import HANDBOOK
from tests.conftest import wait_for_status
from tests.support.worker import WorkerProcess

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

QUESTIONS = [
    "How long are invoices kept?",
    "How many days of paid leave do employees get?",
    "Are trains preferred over flights?",
]
SWEEPER_STALE = 10  # seconds: warm answers here take well under one
ANSWERING = "provenance-answering"  # application_name of the connections the faults kill


@pytest.fixture
def app(celery_worker: WorkerProcess) -> App:
    org = factories.organization("Acme")
    source = factories.data_source(org, "Policies")
    record = factories.upload(source, "handbook.md", HANDBOOK).file
    assert wait_for_status(record.pk).status == "ready"
    return app_create(organization=org, name="Acme HR", data_source_names=["Policies"])


def _connect(**params: object) -> psycopg.Connection:
    """A connection of its own (not Django's), to the test database unless told."""
    return psycopg.connect(**{**connection.get_connection_params(), **params})


def _wait(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} after {timeout} s")
        time.sleep(0.2)


def test_an_answer_finishing_after_its_sweep_does_not_overwrite_it(app: App) -> None:
    """The answer is held inside its search by a lock on the chunks, swept, released:
    its late evidence is rolled back and the recorded failure stands."""
    query_execute(app=app, question=QUESTIONS[1])  # loads the model before the clock runs
    locker = _connect()
    locker.execute("LOCK TABLE documents_chunk IN ACCESS EXCLUSIVE MODE")
    outcome: dict[str, BaseException] = {}

    def answer() -> None:
        try:
            query_execute(app=app, question=QUESTIONS[0])
        except BaseException as exc:  # asserted below
            outcome["error"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=answer)
    thread.start()
    try:
        _wait(
            lambda: _waiting_on("documents_chunk") > 0, 180, "the answer never reached the chunks"
        )
        execution = QueryExecution.objects.get(question=QUESTIONS[0])
        assert execution.status == QueryStatus.RUNNING
        assert query_executions_sweep_stale(stale_seconds=0) == [str(execution.pk)]
    finally:
        locker.rollback()
        locker.close()
    thread.join(120)
    assert isinstance(outcome.get("error"), QueryAbandoned)
    execution.refresh_from_db()
    assert execution.status == QueryStatus.FAILED and execution.answer == ""
    assert execution.error_message.startswith("abandoned:")
    assert not RetrievalHit.objects.filter(query=execution).exists()
    assert not QuotedSource.objects.filter(query=execution).exists()
    assert EvidenceEntry.objects.filter(record_id=str(execution.pk)).count() == 1
    assert ledger_verify().ok


def _waiting_on(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = %s::regclass",
            [table],
        )
        return cursor.fetchone()[0]


class _Faults:
    """Questions asked on several threads while, now and then, the database goes away
    for them as in a restart: their connections are killed (``pg_terminate_backend``)
    and for a moment no new connection is accepted, so an answer cut off mid-way
    cannot record its own failure either. The shared embedded server itself stays up."""

    def __init__(self, app: App, askers: int, rounds: int, seed: int, pause: float) -> None:
        self.app, self.askers, self.rounds = app, askers, rounds
        self.random = random.Random(seed)
        self.pause = pause  # the mean time between outages
        self.outcomes: list[str] = []
        self.kills = 0
        self.done = threading.Event()

    def ask(self, number: int) -> None:
        # this thread's connections, and its reconnections, are the ones the faults hit
        options = {**connection.settings_dict["OPTIONS"], "application_name": ANSWERING}
        connection.settings_dict = {**connection.settings_dict, "OPTIONS": options}
        try:
            for round_ in range(self.rounds):
                question = QUESTIONS[(number + round_) % len(QUESTIONS)]
                connection.close_if_unusable_or_obsolete()  # as at the start of a request
                try:
                    query_execute(app=self.app, question=question)
                    self.outcomes.append("completed")
                except Exception as exc:  # the cut-off ones; counted below
                    self.outcomes.append(type(exc).__name__)
                    time.sleep(0.5)  # a client retrying later
        finally:
            connection.close()

    def outage(self, admin: psycopg.Connection, database: str, seconds: float) -> None:
        admin.execute(f'ALTER DATABASE "{database}" WITH ALLOW_CONNECTIONS false')
        try:
            killed = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = %s AND datname = %s",
                [ANSWERING, database],
            ).fetchone()
            assert killed is not None
            self.kills += killed[0]
            time.sleep(seconds)
        finally:
            admin.execute(f'ALTER DATABASE "{database}" WITH ALLOW_CONNECTIONS true')

    def faults(self) -> None:
        database = connection.settings_dict["NAME"]
        # a database cannot refuse connections while it is the one connected to
        with _connect(dbname="postgres", autocommit=True) as admin:
            while not self.done.wait(self.random.uniform(0.5 * self.pause, 1.5 * self.pause)):
                self.outage(admin, database, self.random.uniform(0.5, 1.5))

    def run(self) -> None:
        faults = threading.Thread(target=self.faults)
        askers = [threading.Thread(target=self.ask, args=(n,)) for n in range(self.askers)]
        faults.start()
        for thread in askers:
            thread.start()
        for thread in askers:
            thread.join(600)
        self.done.set()
        faults.join(30)


def _cut_off_mid_answer(app: App, faults: _Faults) -> QueryExecution:
    """One answer certainly cut off mid-way: held inside its search by a lock on the
    chunks, then an outage kills its connection (and refuses the one it would record
    its failure on). The random outages that follow may or may not catch another."""
    locker = _connect()
    locker.execute("LOCK TABLE documents_chunk IN ACCESS EXCLUSIVE MODE")
    asker = threading.Thread(
        target=_Faults(app, askers=1, rounds=1, seed=0, pause=1).ask, args=(0,)
    )
    try:
        asker.start()
        _wait(
            lambda: _waiting_on("documents_chunk") > 0, 180, "the answer never reached the chunks"
        )
        with _connect(dbname="postgres", autocommit=True) as admin:
            faults.outage(admin, connection.settings_dict["NAME"], 1.0)
    finally:
        locker.rollback()
        locker.close()
    asker.join(60)
    return QueryExecution.objects.get(question=QUESTIONS[0], status=QueryStatus.RUNNING)


def test_answers_cut_off_by_database_outages_leave_nothing_running_after_the_sweep(
    app: App,
) -> None:
    query_execute(app=app, question=QUESTIONS[1])  # loads the model
    started = time.monotonic()
    query_execute(app=app, question=QUESTIONS[2])  # how long an answer takes, warm
    # an outage lasts 0.5-1.5 s: leave room between them for answers to complete
    pause = 3.0 + 3 * (time.monotonic() - started)
    faults = _Faults(app, askers=3, rounds=8, seed=34, pause=pause)
    first = _cut_off_mid_answer(app, faults)
    faults.run()
    stuck = list(
        QueryExecution.objects.filter(status=QueryStatus.RUNNING).values_list("pk", flat=True)
    )
    assert faults.kills > 0 and "completed" in faults.outcomes, faults.outcomes
    assert first.pk in stuck, f"{faults.kills} kills: {faults.outcomes}"
    reported = ledger_verify(stale_seconds=0)  # what the verifier says once they are stale
    assert not reported.ok and str(first.pk) in reported.problem

    # a worker's beat sweeps them once they are PROVENANCE_QUERY_STALE_SECONDS old: one
    # started now with a short threshold (the session worker's is above a cold answer)
    def swept() -> bool:
        return not QueryExecution.objects.filter(status=QueryStatus.RUNNING).exists()

    sweeper = WorkerProcess("sweeper", {"PROVENANCE_QUERY_STALE_SECONDS": str(SWEEPER_STALE)})
    sweeper.start()
    try:
        _wait(swept, SWEEPER_STALE + 60, "answers still running")
    finally:
        sweeper.stop()
    for execution in QueryExecution.objects.filter(pk__in=stuck):
        assert execution.status == QueryStatus.FAILED
        assert execution.error_message.startswith("abandoned: still running")
        assert EvidenceEntry.objects.filter(record_id=str(execution.pk)).count() == 1
    completed = QueryExecution.objects.filter(status=QueryStatus.COMPLETED)
    assert completed.count() >= faults.outcomes.count("completed")  # a kill may follow a commit

    # and beat exports the head that proves it
    last = EvidenceEntry.objects.order_by("-seq").first()
    assert last is not None
    _wait(
        lambda: (head_latest() or ("", {}))[1].get("seq") == last.seq,
        settings.PROVENANCE_AUDIT_HEAD_EXPORT_SECONDS + 30,
        "no head exported",
    )
    out = StringIO()
    call_command("verify_audit_trail", stdout=out)
    assert f"holds the exported head #{last.seq}" in out.getvalue()
