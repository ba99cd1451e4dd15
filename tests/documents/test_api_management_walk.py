"""Issue 33's acceptance walk, over plain HTTP only: an organization set up and run
through REST alone, from one admin key to a revoked editor key."""

from __future__ import annotations

import time
from typing import Any

import pytest
import requests
from pytest_django.live_server_helper import LiveServer

from core.api_keys import api_key_create
from tests import factories
from tests.support.corpus import corpus_paths
from tests.support.worker import WorkerProcess

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

TIMEOUT = 30  # seconds per HTTP call
QUESTION = "How do you get started with swimming?"


class Api:
    """One API key speaking JSON to the live server."""

    def __init__(self, base: str, key: str) -> None:
        self.base, self.session = base, requests.Session()
        self.session.headers["Authorization"] = f"Bearer {key}"

    def call(self, method: str, path: str, status: int, **kwargs: Any) -> Any:
        url = path if path.startswith("http") else f"{self.base}{path}"
        response = self.session.request(method, url, timeout=TIMEOUT, **kwargs)
        assert response.status_code == status, (method, path, response.text)
        return response.json()


def _ready(api: Api, status_url: str, timeout: float = 300) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = api.call("GET", status_url, 200)
        if body["status"] in ("ready", "failed"):
            return body
        time.sleep(0.5)
    raise AssertionError(f"{status_url} not ready after {timeout}s")


def test_an_organization_is_set_up_and_run_through_rest_alone(
    celery_worker: WorkerProcess, live_server: LiveServer
) -> None:
    org = factories.organization("Acme")
    admin = Api(live_server.url, api_key_create(organization=org, role="admin")[1])

    source = admin.call("POST", "/v1/flow/data-sources", 201, json={"name": "Handbook"})
    app = admin.call(
        "POST", "/v1/flow/apps", 201, json={"name": "Handbook", "data_sources": [source["id"]]}
    )
    made = admin.call("POST", "/v1/flow/api-keys", 201, json={"role": "editor", "name": "robot"})
    editor = Api(live_server.url, made["key"])

    document = corpus_paths("duck.md", under="docling/md")[0]
    with document.open("rb") as handle:
        uploaded = editor.call(
            "POST",
            "/v1/flow/files",
            202,
            data={"data_source": "Handbook"},
            files={"file": (document.name, handle, "text/markdown")},
        )
    assert _ready(editor, uploaded["status_url"])["status"] == "ready"

    answer = editor.call("POST", app["query_url"], 201, json={"query": QUESTION})
    assert "[1]" in answer["answer"]
    sources = editor.call("GET", answer["quoted_sources_url"], 200)
    assert {s["document"]["id"] for s in sources} == {uploaded["file_id"]}
    assert any("try not to drown" in s["chunk"]["data"] for s in sources)

    files = editor.call("GET", source["files_url"], 200)
    assert [f["file_id"] for f in files["data"]] == [uploaded["file_id"]]
    assert files["data"][0]["status"] == "ready" and files["has_more"] is False

    reason = "replaced by the 2027 handbook"
    deleted = editor.call(
        "DELETE", f"/v1/flow/files/{uploaded['file_id']}", 200, json={"reason": reason}
    )
    assert deleted["deleted_at"] and deleted["deletion_reason"] == reason
    # the answer given before stays evidence: its sources still name the file
    after = editor.call("GET", answer["quoted_sources_url"], 200)
    assert [(s["document"]["id"], s["chunk"]["data"]) for s in after] == [
        (s["document"]["id"], s["chunk"]["data"]) for s in sources
    ]

    revoked = admin.call("POST", f"/v1/flow/api-keys/{made['id']}/revoke", 200)
    assert revoked["revoked_at"]
    refused = editor.session.get(f"{live_server.url}/v1/flow/data-sources", timeout=TIMEOUT)
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "invalid_api_key"
    listed = admin.call("GET", "/v1/flow/api-keys", 200)["data"]
    assert {k["name"]: k["revoked_at"] is not None for k in listed} == {"robot": True, "": False}
