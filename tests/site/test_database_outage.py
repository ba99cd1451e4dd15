"""A database that cannot be reached is an outage, not a bug: 503 with
``Retry-After``, in the error shape on REST and as a page on the web pages, as
``/healthz`` says; a failing query of ours stays a 500.

The outage is real: gunicorn started with ``DATABASE_URL`` naming a port on
loopback where nothing listens, so every connection is refused (the suite's own
database, which the other tests use, is untouched). The errors the classifier
reads are real ones too: a refused connection, a backend terminated by
``pg_terminate_backend`` and a query cancelled by ``statement_timeout``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
import requests
from django.conf import settings
from django.db import OperationalError, connection, transaction

from core.errors import OUTAGE_RETRY_AFTER_SECONDS, database_outage
from tests.support.net import free_port
from tests.support.web import gunicorn_serving

RETRY = str(OUTAGE_RETRY_AFTER_SECONDS)


@pytest.fixture(scope="module")
def down() -> Iterator[str]:
    """gunicorn whose database refuses every connection."""
    dead = f"postgresql://provenance@127.0.0.1:{free_port()}/provenance"
    env = {"DATABASE_URL": dead, "PROVENANCE_TEST_WORKER": "0", "DJANGO_DEBUG": "0"}
    with gunicorn_serving(f"outage-{settings.TEST_RUN_NAME}", env, workers=1) as base:
        yield base


def test_rest_answers_503_with_retry_after_in_the_error_shape(down: str) -> None:
    response = requests.get(
        f"{down}/v1/flow/files/{uuid.uuid4()}",
        headers={"Authorization": "Bearer pvk_0123456789ab_anything"},
        timeout=30,
    )
    assert response.status_code == 503, response.text
    assert response.headers["Retry-After"] == RETRY
    assert response.json() == {
        "error": {
            "message": "the database is unavailable; try again shortly",
            "type": "api_error",
            "param": None,
            "code": "database_unavailable",
        }
    }


@pytest.mark.parametrize("page", ["/library/", "/admin/"])
def test_a_web_page_answers_a_503_page_with_retry_after(down: str, page: str) -> None:
    # a session cookie makes the page read the session table
    response = requests.get(f"{down}{page}", cookies={"sessionid": "x" * 32}, timeout=30)
    assert response.status_code == 503
    assert response.headers["Retry-After"] == RETRY
    assert response.headers["Content-Type"].startswith("text/html")
    assert "<h1>Temporarily unavailable</h1>" in response.text
    assert "Traceback" not in response.text


def test_healthz_agrees_and_what_needs_no_database_still_answers(down: str) -> None:
    health = requests.get(f"{down}/healthz", timeout=30)
    assert health.status_code == 503 and health.headers["Retry-After"] == "10"
    assert requests.get(f"{down}/v1/no-such-endpoint", timeout=30).status_code == 404
    assert requests.get(f"{down}/accounts/login/", timeout=30).status_code == 200


def test_a_refused_connection_is_an_outage() -> None:
    with pytest.raises(psycopg.OperationalError) as refused:
        psycopg.connect(f"postgresql://x@127.0.0.1:{free_port()}/x", connect_timeout=5)
    assert database_outage(refused.value)


@pytest.mark.django_db(transaction=True)
def test_a_terminated_backend_is_an_outage_and_a_cancelled_query_is_not() -> None:
    params = connection.get_connection_params()
    with psycopg.connect(**params, autocommit=True) as victim:
        pid = victim.info.backend_pid
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        with pytest.raises(psycopg.OperationalError) as terminated:
            victim.execute("SELECT 1")
    assert database_outage(terminated.value)

    with (
        pytest.raises(OperationalError) as cancelled,
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("SET LOCAL statement_timeout = 1")
        cursor.execute("SELECT pg_sleep(1)")
    assert isinstance(cancelled.value.__cause__, psycopg.errors.QueryCanceled)
    assert not database_outage(cancelled.value)
    assert not database_outage(ValueError("no database error at all"))
