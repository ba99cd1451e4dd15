"""A web process loads the query path when it starts, not on its first question.

Each case starts a fresh Python process that imports the WSGI entry point, as
runserver and gunicorn do, against this test database.
"""

from __future__ import annotations

import os
import urllib.parse

import pytest
from django.db import connection

from tests.support.child_python import child_json

pytestmark = pytest.mark.django_db(transaction=True)

PROBE = """
import json, threading
import provenance_site.wsgi
warming = [t for t in threading.enumerate() if t.name == "warm-query-path"]
for thread in warming:
    thread.join(300)
from retrieval import embedders, search
loaded = embedders._default_embedder.cache_info().currsize == 1
print(json.dumps({
    "threads": len(warming),
    "embedder_class": type(embedders.default_embedder()).__name__ if loaded else None,
    "embedder": loaded,
    "question_encoder": loaded
        and getattr(embedders.default_embedder(), "_query_encoder", None) is not None,
    "statistics": "common lexemes" in search._statistics,
}))
"""


def _test_database_url() -> str:
    db = connection.settings_dict
    host = urllib.parse.quote(db["HOST"] or db["OPTIONS"].get("host", ""), safe="")
    password = f":{urllib.parse.quote(db['PASSWORD'], safe='')}" if db["PASSWORD"] else ""
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgres://{db['USER']}{password}@{host}{port}/{db['NAME']}"


def _probe(**env: str) -> dict:
    out, stderr = child_json(PROBE, {"DATABASE_URL": _test_database_url(), **env})
    assert "warming the query path failed" not in stderr, stderr[-3000:]
    return out


def test_the_web_entry_point_warms_the_query_path() -> None:
    assert _probe(PROVENANCE_WARM_EMBEDDER="1") == {
        "threads": 1,
        "embedder_class": "MiniLmEmbedder",
        "embedder": True,
        "question_encoder": True,
        "statistics": True,
    }


def test_warming_can_be_turned_off() -> None:
    assert _probe(PROVENANCE_WARM_EMBEDDER="0") == {
        "threads": 0,
        "embedder_class": None,
        "embedder": False,
        "question_encoder": False,
        "statistics": False,
    }


def test_a_remote_embedder_is_not_called_at_start() -> None:
    # nothing listens there: a warm-up request would fail and log a warning
    assert _probe(
        PROVENANCE_WARM_EMBEDDER="1", PROVENANCE_EMBEDDINGS_URL="http://127.0.0.1:9/v1"
    ) == {
        "threads": 1,
        "embedder_class": "OpenAiCompatibleEmbedder",
        "embedder": True,
        "question_encoder": False,
        "statistics": True,
    }


def test_a_forked_child_does_not_inherit_a_held_loading_lock() -> None:
    from retrieval import embedders

    held = embedders._loading
    held.acquire()  # as a parent's warm-up thread holds it while loading
    try:
        pid = os.fork()
        if pid == 0:  # the child: a fresh lock, free at once
            os._exit(0 if embedders._loading.acquire(timeout=5) else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        held.release()
    assert os.waitstatus_to_exitcode(status) == 0
