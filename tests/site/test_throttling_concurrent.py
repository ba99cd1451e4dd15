"""The per-key budget holds when many clients share one key at once, on gunicorn
(two processes of four threads): each request's count is taken atomically, by the
database (the default) or by Redis (when the cache is Redis), so of 80 requests
fired by 20 threads at a budget of 40 exactly 40 pass, whatever their interleaving.

The rate is per hour so the burst cannot straddle two windows on a loaded host (the
only slack a fixed window has: docs/configuration.md)."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from django.conf import settings

from tests import factories
from tests.support.web import gunicorn_serving

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

LIMIT, CLIENTS, EACH = 40, 20, 4
REDIS_URL = "redis://127.0.0.1:6379/11"


@pytest.fixture(scope="module", params=["database", "redis"])
def web(request: pytest.FixtureRequest, django_db_setup: None) -> Iterator[str]:
    """gunicorn counting in the database's table, or in Redis (a Redis broker makes
    the cache Redis: settings/base.py)."""
    env = {"PROVENANCE_THROTTLE_KEY": f"{LIMIT}/hour"}
    if request.param == "redis":
        env["CELERY_BROKER_URL"] = REDIS_URL
        _redis_forget(settings.TEST_RUN_NAME)
    with gunicorn_serving(f"throttle-{request.param}-{settings.TEST_RUN_NAME}", env) as base:
        yield base


def _redis_forget(prefix: str) -> None:
    """This run's counts of an earlier run (key ids start again with a new test
    database); other runs' keys, under their own prefix, stay."""
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    for key in client.scan_iter(f"{prefix}:*"):
        client.delete(key)


def _fire(base: str, key: str) -> list[requests.Response]:
    url = f"{base}/v1/flow/files/{uuid.uuid4()}"
    with requests.Session() as session:
        session.headers["Authorization"] = f"Bearer {key}"
        return [session.get(url, timeout=60) for _ in range(EACH)]


def test_twenty_clients_on_one_key_get_exactly_its_budget(web: str) -> None:
    org = factories.organization(f"Acme {uuid.uuid4()}")
    key = factories.api_key(org)
    with ThreadPoolExecutor(CLIENTS) as pool:
        answers = [
            r for batch in pool.map(lambda _: _fire(web, key), range(CLIENTS)) for r in batch
        ]
    statuses = Counter(r.status_code for r in answers)
    assert statuses == {404: LIMIT, 429: CLIENTS * EACH - LIMIT}, statuses
    for refused in (r for r in answers if r.status_code == 429):
        assert 3500 <= int(refused.headers["Retry-After"]) <= 3600  # the window's end
        assert refused.json()["error"]["code"] == "throttled"
    # another key of the same organization has a budget of its own
    assert _fire(web, factories.api_key(org))[0].status_code == 404
