"""The full-text side of hybrid search runs on a search thread's own connection
while the caller embeds the question and runs HNSW; the results must be exactly
those of running every statement in turn on the caller's connection."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connection, transaction
from pytest_django import DjangoDbBlocker, Settings

from documents.models import Chunk
from provenance_site.env import usable_cores
from retrieval import search
from retrieval.embedders import default_embedder
from tests import factories
from tests.citations.conftest import Library

QUESTIONS = [
    "Which NFL team represented the AFC at Super Bowl 50?",
    "What is the paid leave policy for new employees?",
    "Where did the Normans come from?",
    "operator syntax & | ! ( ) <-> :* 'quoted' \\ back",
]


@pytest.fixture(autouse=True)
def _statistics_held(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Both ways must read the same document-frequency estimates: a process keeps
    them ``STATISTICS_TTL_SECONDS`` and reads them again from ANALYZE's statistics,
    which autovacuum renews after other tests' inserts. Read once per test here, so
    an expiry between two searches cannot change a BM25 score (it did once in CI)."""
    search._statistics.clear()
    monkeypatch.setattr(search, "STATISTICS_TTL_SECONDS", float("inf"))
    yield
    search._statistics.clear()


def _pending(library: Library, question: str, **extra: Any) -> search.HybridSearch:
    return search.HybridSearch(
        organization_id=library.organization.pk,
        data_source_ids=list(library.squad.data_sources.values_list("pk", flat=True))
        + list(library.handbook.data_sources.values_list("pk", flat=True)),
        question=question,
        candidate_k=40,
        top_k=10,
        **extra,
    )


def _search(library: Library, question: str, vector: list[float], **extra: Any) -> list[tuple]:
    hits = _pending(library, question, **extra).finish(vector)
    return [dataclasses.astuple(hit) for hit in hits]


def _alive(pids: list[int]) -> set[int]:
    """Which of these backends are still connected."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE pid = ANY(%s)", [pids])
        return {row[0] for row in cursor.fetchall()}


def test_search_threads_give_the_results_of_the_caller_connection(
    library: Library, django_db_blocker: DjangoDbBlocker, settings: Settings
) -> None:
    """Outside a transaction the lexical side runs on a search thread; in turn
    (``PROVENANCE_SEARCH_THREADS=0``) every statement runs on the caller's
    connection. Same hits, same order, same scores, for every question."""
    embedder = default_embedder()
    settings.PROVENANCE_SEARCH_THREADS = 2  # the default is 0 on a host of 2 cores
    with django_db_blocker.unblock():
        search.search_threads_close()
        vectors = {q: embedder.embed_query(q) for q in QUESTIONS}
        assert not connection.in_atomic_block
        threaded = {q: _search(library, q, v) for q, v in vectors.items()}
        assert search._pool_connections, "the lexical side did not run on a search thread"
        assert all(w is not connection for w in search._pool_connections)

        # the full-text side still queued when finish() runs: HNSW alone, then fusion
        pool = search._search_pool()
        assert pool is not None
        blockers = [pool.submit(time.sleep, 0.5) for _ in range(pool._max_workers)]
        pending = _pending(library, QUESTIONS[0])
        assert pending._lexical is not None and not pending._lexical.done()
        two_statements = [dataclasses.astuple(h) for h in pending.finish(vectors[QUESTIONS[0]])]
        assert all(b.done() for b in blockers)
        assert two_statements == threaded[QUESTIONS[0]]
        # the full-text side done first: HNSW and fusion in one statement
        pending = _pending(library, QUESTIONS[0])
        assert pending._lexical is not None
        pending._lexical.result()
        one_statement = [dataclasses.astuple(h) for h in pending.finish(vectors[QUESTIONS[0]])]
        assert one_statement == threaded[QUESTIONS[0]]

        settings.PROVENANCE_SEARCH_THREADS = 0
        in_turn = {q: _search(library, q, v) for q, v in vectors.items()}
        assert threaded == in_turn
        assert any(hit[-2] for hits in threaded.values() for hit in hits), "no lexical hit"
        assert any(hit[-3] for hits in threaded.values() for hit in hits), "no semantic hit"

        # the search threads' own backends, by pid: a count of the database's backends
        # also moved with the session worker's connections (it failed so, once)
        pids = [w.connection.info.backend_pid for w in search._pool_connections]
        assert pids and len(set(pids)) == len(pids)
        assert _alive(pids) == set(pids)
        search.search_threads_close()
        assert search._pool_connections == []
        deadline = time.monotonic() + 5  # a backend leaves pg_stat_activity as it exits
        while _alive(pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _alive(pids) == set()


def test_a_failing_lexical_side_raises_in_the_caller_and_the_thread_recovers(
    library: Library, django_db_blocker: DjangoDbBlocker, settings: Settings
) -> None:
    question = QUESTIONS[0]
    vector = default_embedder().embed_query(question)
    settings.PROVENANCE_SEARCH_THREADS = 2
    with django_db_blocker.unblock():
        search.search_threads_close()
        expected = _search(library, question, vector)
        assert search._pool_connections, "the lexical side did not run on a search thread"
        with pytest.raises(psycopg.errors.UndefinedObject, match="no_such_analyzer"):
            _search(library, question, vector, analyzer="no_such_analyzer")
        assert not connection.in_atomic_block
        for _ in range(3):  # every search thread is usable again
            assert _search(library, question, vector) == expected
        search.search_threads_close()


@pytest.mark.django_db
def test_a_caller_inside_a_transaction_finds_the_rows_it_wrote(library: Library) -> None:
    """Another connection could not see uncommitted rows, so a caller inside a
    transaction searches on its own connection."""
    word = f"zq{uuid.uuid4().hex[:10]}"
    source = library.squad.data_sources.get()
    template = Chunk.objects.filter(data_source=source, is_retrievable=True).first()
    assert template is not None and template.embedding is not None
    added = factories.chunk_like(
        template,
        f"The {word} appears in one chunk only.",
        10_000,
        embedding=[-x for x in template.embedding],  # only the full-text side can find it
    )
    assert connection.in_atomic_block
    vector = list(template.embedding)
    hits = _search(library, f"Where does {word} appear?", vector)
    assert added.pk in [hit[0] for hit in hits]
    assert hits[[hit[0] for hit in hits].index(added.pk)][-2] is not None  # a full-text hit
    with transaction.atomic():  # a nested block too
        assert added.pk in [hit[0] for hit in _search(library, word, vector)]


@pytest.mark.django_db
def test_the_semantic_statement_walks_the_half_precision_hnsw_index(library: Library) -> None:
    """The ORDER BY must be the index's expression, or Postgres sorts every chunk."""
    question = QUESTIONS[0]
    pending = search.HybridSearch(
        organization_id=library.organization.pk,
        data_source_ids=list(library.squad.data_sources.values_list("pk", flat=True)),
        question=question,
    )
    params = dict(
        pending.params, vector=search.vector_literal(default_embedder().embed_query(question))
    )
    with connection.cursor() as cursor:
        cursor.execute(search._SETTINGS, [str(search.ef_search_for(search.indexed_chunks()))])
        # on this small table the planner rightly sorts a few rows instead; with sorting
        # priced out, only an ORDER BY matching the index expression avoids a Sort
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("EXPLAIN " + search._SEMANTIC_SQL, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Index Scan using chunk_embedding_hnsw_half" in plan, plan
    assert "Sort" not in plan, plan


@pytest.mark.parametrize(
    ("indexed", "ef"),
    [(0, 128), (50_000, 128), (100_000, 128), (400_000, 256), (1_000_000, 405), (10**8, 512)],
)
def test_ef_search_grows_with_the_graph(indexed: int, ef: int) -> None:
    assert search.ef_search_for(indexed) == ef


@pytest.mark.django_db
def test_the_search_runs_the_ef_search_of_the_graphs_size(library: Library) -> None:
    """The size is the partial index's entry count as ANALYZE estimates it (every
    retrievable chunk, of every tenant), and the search's transaction sets its ef."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE documents_chunk")
    search._statistics.pop("indexed chunks", None)
    retrievable = Chunk.objects.filter(is_retrievable=True).count()
    assert retrievable > 0
    assert search.indexed_chunks() == retrievable  # a small table is sampled whole
    with transaction.atomic():
        search._rows("SELECT 1", {})
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('hnsw.ef_search')")
            assert cursor.fetchone()[0] == str(search.ef_search_for(retrievable))
    search._statistics["indexed chunks"] = (time.monotonic(), 1_000_000)  # as if at 1M
    try:
        with transaction.atomic():
            search._rows("SELECT 1", {})
            with connection.cursor() as cursor:
                cursor.execute("SELECT current_setting('hnsw.ef_search')")
                assert cursor.fetchone()[0] == "405"
    finally:
        search._statistics.pop("indexed chunks", None)


def _default_search_threads(cores: set[int] | None = None, **env: str) -> int:
    """``PROVENANCE_SEARCH_THREADS`` as a fresh process's settings read it, that
    process pinned to ``cores`` when given."""
    unset = ("PROVENANCE_SEARCH_THREADS", "PROVENANCE_QUERY_THREADS")
    environment = {k: v for k, v in os.environ.items() if k not in unset}
    environment |= {"DJANGO_SETTINGS_MODULE": "provenance_site.settings.test", **env}
    code = "from django.conf import settings; print(settings.PROVENANCE_SEARCH_THREADS)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[2],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        preexec_fn=None if cores is None else lambda: os.sched_setaffinity(0, cores),
    )
    return int(done.stdout.strip())


def test_search_threads_default_to_a_core_left_beside_the_question_encoder() -> None:
    """On 2 cores the full-text thread competed with the question's two encoder
    threads (retrieval call p50 16.4 ms with it, 12.3 without): by default there
    is one only where a core is left; set, the variable wins."""
    mine = sorted(os.sched_getaffinity(0))
    assert len(mine) >= 2, "the suite runs on 2 cores or more"
    assert _default_search_threads(set(mine[:2])) == 0  # 2 cores, 2 encoder threads
    assert _default_search_threads(set(mine[:1])) == 0
    assert _default_search_threads(set(mine[:2]), PROVENANCE_QUERY_THREADS="1") == 2
    cores = usable_cores()
    assert cores == len(mine)
    assert _default_search_threads(PROVENANCE_QUERY_THREADS=str(cores)) == 0
    assert _default_search_threads(PROVENANCE_QUERY_THREADS=str(cores - 1)) == 2
    assert _default_search_threads(PROVENANCE_QUERY_THREADS="1", PROVENANCE_SEARCH_THREADS="3") == 3
    assert (
        _default_search_threads(PROVENANCE_QUERY_THREADS=str(cores), PROVENANCE_SEARCH_THREADS="2")
        == 2
    )
