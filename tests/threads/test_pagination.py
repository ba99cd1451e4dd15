"""Message and run lists page like OpenAI's: ``limit``, ``order``, ``after``, ``before``."""

from __future__ import annotations

import pytest
from django.test import Client

from citations.threads import services
from core.api_keys import api_key_verify
from tests import factories

pytestmark = pytest.mark.django_db


def _ids(client: Client, path: str) -> tuple[list[str], bool]:
    body = client.get(path).json()
    ids = [m["id"] for m in body["data"]]
    assert (body["first_id"], body["last_id"]) == ((ids[0], ids[-1]) if ids else (None, None))
    return ids, body["has_more"]


def test_it_pages_through_messages_in_both_orders() -> None:
    org = factories.organization("Acme")
    key = factories.api_key(org)  # the thread is the key's: it reads it (core.roles)
    thread = services.thread_create(organization=org, api_key=api_key_verify(presented=key))
    ids = [
        str(services.message_create(thread=thread, role="user", content=f"Question {n}?").pk)
        for n in range(5)
    ]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    base = f"/v1/threads/{thread.pk}/messages"

    assert _ids(client, base) == (ids[::-1], False)  # newest first by default
    assert _ids(client, f"{base}?order=asc&limit=2") == (ids[:2], True)
    assert _ids(client, f"{base}?order=asc&limit=2&after={ids[1]}") == (ids[2:4], True)
    assert _ids(client, f"{base}?order=asc&limit=2&after={ids[3]}") == (ids[4:], False)
    assert _ids(client, f"{base}?limit=2&after={ids[3]}") == ([ids[2], ids[1]], True)
    assert _ids(client, f"{base}?order=asc&limit=2&before={ids[3]}") == (ids[1:3], True)
    assert _ids(client, f"{base}?limit=2&before={ids[1]}") == ([ids[3], ids[2]], True)
    assert _ids(client, f"{base}?limit=100&before={ids[0]}") == (
        [ids[4], ids[3], ids[2], ids[1]],
        False,
    )
    assert _ids(client, f"{base}?order=asc&after={ids[4]}") == ([], False)
