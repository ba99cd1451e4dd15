"""The source-citation endpoints that list rows of an answer (its quoted sources,
its v1 sentence citations, its reasoning steps, its retrieval hits, its Markdown
record): the query count does not grow with the rows listed, so an N+1 query cannot creep in. Two
answers of the same app are compared: one of one step, one of two."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from citations.services import query_execute
from tests.citations import steps_support
from tests.citations.steps_support import ONE_FACT, TWO_FACTS

pytestmark = pytest.mark.django_db

steps_library = steps_support.steps_library

# (method, path under the answer, the rows a response lists)
ENDPOINTS: dict[str, tuple[str, str, Callable[[Any], int]]] = {
    "quoted-sources": (
        "get",
        "query-execution-sources/{q}/get-quoted-sources",
        lambda r: len(r.json()),
    ),
    "sentence-citations": ("post", "query-executions/{q}/citations", lambda r: len(r.json())),
    "reasoning": (
        "get",
        "query-executions/{q}/reasoning",
        lambda r: len(r.json()["reasoning_steps"]),
    ),
    "hits": ("get", "query-executions/{q}", lambda r: len(r.json()["hits"])),
    "citations-markdown": (
        "get",
        "query-executions/{q}/citations.md",
        lambda r: len(re.findall(r"^\d+\. ", r.content.decode(), re.M)),  # a line per hit
    ),
}


def _listed(client: APIClient, method: str, url: str, rows: Callable) -> tuple[int, int]:
    """(queries, rows) of one request; the first one warms caches, uncounted."""
    getattr(client, method)(url)
    with CaptureQueriesContext(connection) as queries:
        response = getattr(client, method)(url)
    assert response.status_code == 200, response.content
    return len(queries), rows(response)


@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
def test_an_answer_s_list_query_count_does_not_grow_with_its_rows(
    steps_library: steps_support.StepsLibrary, endpoint: str
) -> None:
    method, path, rows = ENDPOINTS[endpoint]
    app = steps_library.app()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {steps_library.key}")
    counted = []
    for question in (ONE_FACT, TWO_FACTS):
        execution = query_execute(app=app, question=question)
        url = f"/semantics/apps/{app.pk}/" + path.format(q=execution.pk)
        counted.append(_listed(client, method, url, rows))
    (few, fewer_rows), (many, more_rows) = counted
    assert 0 < fewer_rows < more_rows, counted
    assert many <= few, f"{endpoint}: {few} queries for {fewer_rows} rows, {many} for {more_rows}"
