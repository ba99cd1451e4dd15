"""Rate limits: a budget per API key and one per anonymous address, counted where
every web process sees it (not a process's memory), in windows whose end
``Retry-After`` names, answered with 429 in the error shape. Concurrent clients:
``test_throttling_concurrent.py``."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import pytest
from django.core.cache import caches
from pytest_django import Settings
from rest_framework.test import APIClient

from core.models import ThrottleWindow
from core.throttling import ApiKeyRateThrottle
from documents.models import ApiKey
from tests import factories

if TYPE_CHECKING:
    from rest_framework.response import _MonkeyPatchedResponse


pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _small_rates(settings: Settings) -> None:
    settings.PROVENANCE_THROTTLE_KEY = "3/min"
    settings.PROVENANCE_THROTTLE_ANON = "2/min"
    caches["default"].clear()


def _keyed(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def _throttled(response: _MonkeyPatchedResponse) -> None:
    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 60
    error = response.json()["error"]
    assert error["code"] == "throttled" and error["type"] == "rate_limit_error"


def test_each_key_has_its_own_budget() -> None:
    org = factories.organization("Acme")
    first, second = factories.api_key(org), factories.api_key(org)
    url = f"/v1/flow/files/{uuid.uuid4()}"
    assert [_keyed(first).get(url).status_code for _ in range(3)] == [404] * 3
    _throttled(_keyed(first).get(url))
    _throttled(_keyed(first).post("/v1/threads", {}, format="json"))  # every endpoint
    assert _keyed(second).get(url).status_code == 404


def test_anonymous_callers_are_counted_by_address_and_cannot_forge_one() -> None:
    url = f"/semantics/apps/{uuid.uuid4()}/query-executions/{uuid.uuid4()}"
    here = APIClient(REMOTE_ADDR="192.0.2.10")
    assert [here.get(url).status_code for _ in range(2)] == [404, 404]
    _throttled(here.get(url))
    _throttled(here.get(url, HTTP_X_FORWARDED_FOR="198.51.100.7"))  # no trusted proxy
    assert APIClient(REMOTE_ADDR="192.0.2.11").get(url).status_code == 404


def test_the_counts_live_in_the_database_without_redis() -> None:
    """A process-local count would give each web worker its own budget; the count
    is the database's (``core.ThrottleWindow``) when the cache is no Redis."""
    assert type(caches["default"]).__name__ == "DatabaseCache"
    org = factories.organization("Acme")
    client = _keyed(factories.api_key(org))
    for _ in range(2):
        client.get(f"/v1/flow/files/{uuid.uuid4()}")
    key_id = ApiKey.objects.get(organization=org).pk
    assert ThrottleWindow.objects.get(key=f"throttle_key_key-{key_id}").hits == 2


class _Clock:
    """The throttles' time (DRF's ``timer`` seam), moved by the test."""

    def __init__(self) -> None:
        self.now = 1_900_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    clock = _Clock()
    monkeypatch.setattr(ApiKeyRateThrottle, "timer", clock)
    return clock


def test_a_window_opens_at_the_first_request_and_retry_after_counts_down_to_its_end(
    clock: _Clock,
) -> None:
    client = _keyed(factories.api_key(factories.organization("Acme")))
    url = f"/v1/flow/files/{uuid.uuid4()}"
    assert [client.get(url).status_code for _ in range(3)] == [404] * 3
    clock.now += 45.2
    refused = client.get(url)
    _throttled(refused)
    assert refused["Retry-After"] == "15"  # 60 - 45.2, rounded up
    clock.now += 14.7
    assert client.get(url)["Retry-After"] == "1"  # never 0 while the window lasts
    clock.now += 0.1  # the window is over: a new budget, counted from this request
    assert [client.get(url).status_code for _ in range(3)] == [404] * 3
    _throttled(client.get(url))


def test_windows_long_over_are_swept_when_a_new_one_opens(clock: _Clock) -> None:
    org = factories.organization("Acme")
    first, second = _keyed(factories.api_key(org)), _keyed(factories.api_key(org))
    first.get(f"/v1/flow/files/{uuid.uuid4()}")
    assert ThrottleWindow.objects.count() == 1
    clock.now += 61
    second.get(f"/v1/flow/files/{uuid.uuid4()}")  # opens its window: the first's is over
    second_id = ApiKey.objects.order_by("pk").values_list("pk", flat=True).last()
    assert list(ThrottleWindow.objects.values_list("key", "hits")) == [
        (f"throttle_key_key-{second_id}", 1)
    ]


def test_a_bad_rate_stops_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.core.exceptions import ImproperlyConfigured

    from provenance_site.env import env_rate

    monkeypatch.setenv("PROVENANCE_THROTTLE_KEY", "lots")
    with pytest.raises(ImproperlyConfigured, match="PROVENANCE_THROTTLE_KEY"):
        env_rate("PROVENANCE_THROTTLE_KEY", "60/min")
    monkeypatch.setenv("PROVENANCE_THROTTLE_KEY", "off")
    assert env_rate("PROVENANCE_THROTTLE_KEY", "60/min") is None
