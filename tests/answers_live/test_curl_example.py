"""The source-citation document's curl example, with only host, ids and key
substituted, against a running server."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from pytest_django.live_server_helper import LiveServer

from citations.llm_apps import app_create
from citations.services import query_execute
from tests import factories
from tests.conftest import wait_for_status
from tests.support.worker import WorkerProcess

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def test_documented_curl_returns_the_documented_shape(
    celery_worker: WorkerProcess, live_server: LiveServer
) -> None:
    assert shutil.which("curl"), "curl is needed to run the documented example"
    org = factories.organization()
    source = factories.data_source(org, "Human Resources")
    record = factories.upload(
        source,
        "Remote_Chart.md",
        b"# Remote work charter\n\nEmployees may work remotely two days per week.\n",
    ).file
    assert wait_for_status(record.pk).status == "ready"
    app = app_create(organization=org, name="HR", data_source_names=["Human Resources"])
    api_key = factories.api_key(org)
    query = query_execute(app=app, question="How many days per week may employees work remotely?")
    # the example as documented; only host, ids and key are ours
    command = (
        f'curl -X GET "{live_server.url}/semantics/apps/{app.pk}/query-execution-sources/'
        f'{query.pk}/get-quoted-sources" \\\n'
        f'-H "accept: application/json" \\\n'
        f'-H "Wikit-Semantics-API-Key: {api_key}" \\\n'
        f'-H "X-Wikit-Organization-Id: {org.pk}"'
    )
    result = subprocess.run(
        ["bash", "-c", command + " --silent --show-error --fail"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    sources = json.loads(result.stdout)
    assert isinstance(sources, list) and sources
    source_json = sources[0]
    assert source_json["quoted_as"] == "1"
    assert source_json["document"]["name"] == "Remote_Chart.md"
    assert source_json["data_source"] == {"id": str(source.pk), "name": "Human Resources"}
    assert "two days per week" in source_json["chunk"]["data"]
    assert isinstance(source_json["score"], float)
    assert source_json["retriever_type"] in {"SEMANTIC_SEARCH", "FULL_TEXT_SEARCH", "HYBRID_SEARCH"}
