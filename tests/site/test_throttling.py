"""Rate limits: a budget per API key and one per anonymous address, counted in the
shared cache (not a process's memory), answered with 429 in the error shape and a
``Retry-After`` header."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import pytest
from django.core.cache import caches
from pytest_django import Settings
from rest_framework.test import APIClient

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


def test_the_counts_live_in_the_shared_cache() -> None:
    """A process-local cache would give each web worker its own budget."""
    backend = type(caches["default"]).__name__
    assert backend in {"DatabaseCache", "RedisCache"}
    org = factories.organization("Acme")
    client = _keyed(factories.api_key(org))
    for _ in range(2):
        client.get(f"/v1/flow/files/{uuid.uuid4()}")
    key_id = ApiKey.objects.get(organization=org).pk
    assert len(caches["default"].get(f"throttle_key_key-{key_id}")) == 2


def test_a_bad_rate_stops_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.core.exceptions import ImproperlyConfigured

    from provenance_site.env import env_rate

    monkeypatch.setenv("PROVENANCE_THROTTLE_KEY", "lots")
    with pytest.raises(ImproperlyConfigured, match="PROVENANCE_THROTTLE_KEY"):
        env_rate("PROVENANCE_THROTTLE_KEY", "60/min")
    monkeypatch.setenv("PROVENANCE_THROTTLE_KEY", "off")
    assert env_rate("PROVENANCE_THROTTLE_KEY", "60/min") is None
