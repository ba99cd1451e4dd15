"""Hybrid retrieval: pgvector cosine search (HNSW) and Postgres full-text search,
fused by reciprocal rank fusion in SQL.

Two connections. The full-text candidates are found on a search thread's own
connection (:class:`HybridSearch` starts it) while the caller embeds the
question; then one statement runs HNSW and fuses both candidate lists by RRF,
joining only the rows that can still reach the top. If the full-text side is
still running by then, HNSW runs meanwhile as its own statement and a last one
fuses, so the slower side, not the sum, is on the critical path. A caller
inside a transaction runs everything on its own connection: another connection
could not see the rows that transaction wrote. Statements
are prepared on each connection (server-side binding): parsing and planning the
fused statement with its 3.5 KB vector literal cost ~3 ms per question.

Ranks are SQL ``rank()``: equal distances share a rank, so equal documents get
equal fused scores and the documented tiebreak (score_norm desc, section asc,
snippet_id asc) decides their order.

Filtering by organization and data sources happens inside each candidate
statement, on columns of the chunk table itself, so the HNSW scan (iterative,
pgvector 0.8) never returns another tenant's rows. The lexical side is an OR of
the question's words over a bounded candidate set, so frequent words cannot
make ranking scan thousands of long chunks. Its filters are written
``(…) IS TRUE`` and ``coalesce(is_retrievable, false)`` so that no b-tree
(organization, the partial index of retrievable chunks) can serve them: with
one, the planner walks it testing the tsquery row by row, de-TOASTing each
tsvector (1-5 ms at 20k chunks); without, the GIN index finds the rows.
Each branch ranks its own rows, so the UNION deduplicates (id, score) pairs
instead of sorting tsvectors.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import psycopg
from django.conf import settings
from django.db import connection, connections, transaction

RRF_K = 60
# full-text candidates: chunks holding every word of the question first, then any word;
# bounded so frequent words cannot make ranking scan thousands of long chunks
LEXICAL_CANDIDATE_CAP = 100
EF_SEARCH = 128
# a question of common words ("class", "data", "time") matches tens of thousands of
# chunks; GIN would collect them all (6+ ms at 100k) before the candidate cap applies
GIN_FUZZY_LIMIT = 2000
FREQUENT_ROWS = 2000  # the OR side leaves out words found in more chunks than this
FREQUENT_TTL_SECONDS = 300.0

# one round trip; index scans only (a sequential scan over out-of-line tsvectors is
# the slow path); GIN stops collecting a frequent word's rows near the limit
_SETTINGS = """
SELECT set_config('hnsw.ef_search', %s, true),
       set_config('hnsw.iterative_scan', 'strict_order', true),
       set_config('enable_seqscan', 'off', true),
       set_config('gin_fuzzy_search_limit', %s, true)
"""

# the full-text candidates: chunks holding every word of the question, then chunks
# holding any of its rarer words, ranked by ts_rank_cd over all its words
_LEXICAL_SQL = """
WITH rare_words AS (
    -- the OR side matches only on words that are not in thousands of chunks
    -- each lexeme quoted in tsquery syntax (quote and backslash escaped), so no
    -- question text can be read as an operator
    SELECT coalesce(
        string_agg('''' || replace(replace(word, '\\', '\\\\'), '''', '''''') || '''', ' | '),
        '__no_rare_words__'
    )::tsquery AS query
    FROM unnest(tsvector_to_array(to_tsvector(%(analyzer)s::regconfig, %(question)s))) AS word
    WHERE word <> ALL(%(frequent)s::text[])
), lexical AS (
    (SELECT c.id, ts_rank_cd(c.search_vector, to_tsquery(%(analyzer)s::regconfig, %(tsquery)s))
            AS score
     FROM documents_chunk c
     WHERE c.search_vector @@ plainto_tsquery(%(analyzer)s::regconfig, %(question)s)
       AND (c.organization_id = %(organization)s) IS TRUE
       AND (c.data_source_id = ANY(%(data_sources)s)) IS TRUE
       AND coalesce(c.is_retrievable, false)
     LIMIT %(lexical_cap)s)
    UNION
    (SELECT c.id, ts_rank_cd(c.search_vector, to_tsquery(%(analyzer)s::regconfig, %(tsquery)s))
     FROM documents_chunk c
     WHERE c.search_vector @@ (SELECT query FROM rare_words)
       AND (c.organization_id = %(organization)s) IS TRUE
       AND (c.data_source_id = ANY(%(data_sources)s)) IS TRUE
       AND coalesce(c.is_retrievable, false)
     LIMIT %(lexical_cap)s)
)
SELECT id, score FROM lexical ORDER BY score DESC, id LIMIT %(k)s
"""

# the semantic candidates: HNSW over half-precision vectors (the index's expression),
# filtered inside the scan (iterative, pgvector 0.8); distances reported in full precision.
# 384 = documents.models.EMBEDDING_DIMENSIONS, as in the index expression
_SEMANTIC_SQL = """
SELECT c.id, c.embedding <=> %(vector)s::vector AS distance
FROM documents_chunk c
WHERE c.organization_id = %(organization)s
  AND c.data_source_id = ANY(%(data_sources)s)
  AND c.is_retrievable
ORDER BY c.embedding::halfvec(384) <=> %(vector)s::halfvec(384)
LIMIT %(k)s
"""

# reciprocal rank fusion of both candidate lists; only the rows that can still reach
# the top (ties on the fused score included) are joined to the chunks for the tiebreak
_FUSE_REST = """
), lexical AS (
    SELECT id, score, rank() OVER (ORDER BY score DESC) AS rank
    FROM unnest(%(lexical_ids)s::uuid[], %(lexical_scores)s::float8[]) AS l(id, score)
), fused AS (
    SELECT coalesce(s.id, l.id) AS id, s.rank AS semantic_rank, s.distance,
           l.rank AS lexical_rank, l.score AS lexical_score,
           coalesce(1.0 / (%(rrf_k)s + s.rank), 0) + coalesce(1.0 / (%(rrf_k)s + l.rank), 0) AS rrf
    FROM semantic s FULL OUTER JOIN lexical l ON s.id = l.id
    ORDER BY rrf DESC
    FETCH FIRST %(top)s ROWS WITH TIES
)
SELECT f.id, f.semantic_rank, f.lexical_rank, f.lexical_score, f.rrf,
       greatest(0, least(1, 1 - coalesce(f.distance, c.embedding <=> %(vector)s::vector)))
           AS score_norm,
       c.section
FROM fused f JOIN documents_chunk c ON c.id = f.id
ORDER BY f.rrf DESC, score_norm DESC, c.section ASC, f.id::text ASC
LIMIT %(top)s
"""
_RANKED_BY_DISTANCE = """
WITH semantic AS (
    SELECT id, distance, rank() OVER (ORDER BY distance) AS rank
    FROM """
# both candidate lists given (the semantic one was found while the full-text side ran)
_FUSE_SQL = (
    _RANKED_BY_DISTANCE
    + "unnest(%(semantic_ids)s::uuid[], %(semantic_distances)s::float8[]) AS s(id, distance)"
    + _FUSE_REST
)
# the full-text list given, the semantic one found in the same statement: one round trip
_SEMANTIC_FUSE_SQL = _RANKED_BY_DISTANCE + "(" + _SEMANTIC_SQL + ") AS s" + _FUSE_REST

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


@dataclass(frozen=True)
class SearchHit:
    """One fused result; ``score_raw`` is the RRF score, ``score_norm`` the cosine in 0..1."""

    chunk_id: uuid.UUID
    section: str
    score_raw: float
    score_norm: float
    semantic_rank: int | None
    lexical_rank: int | None
    lexical_score: float | None

    @property
    def retriever_type(self) -> str:
        if self.semantic_rank and self.lexical_rank:
            return "HYBRID_SEARCH"
        return "SEMANTIC_SEARCH" if self.semantic_rank else "FULL_TEXT_SEARCH"


def or_tsquery(question: str) -> str:
    """``word1 | word2 | …`` from the question's words (tsquery syntax stripped)."""
    words = [w.lower() for w in _WORD.findall(question)][:64]
    return " | ".join(dict.fromkeys(words)) or "__no_words__"


_frequent_cache: tuple[float, list[str]] = (0.0, [])


def frequent_lexemes() -> list[str]:
    """Lexemes found in more than ``FREQUENT_ROWS`` chunks, from ANALYZE's statistics.

    Postgres samples each tsvector column's most common lexemes and their
    frequencies; a word in tens of thousands of chunks carries little signal for
    ranking but costs its whole posting list. Cached per process for
    ``FREQUENT_TTL_SECONDS``; small databases have none, so nothing is dropped.
    """
    global _frequent_cache
    fetched_at, lexemes = _frequent_cache
    if time.monotonic() - fetched_at < FREQUENT_TTL_SECONDS:
        return lexemes
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples"
            " FROM pg_stats s JOIN pg_class c ON c.relname = s.tablename"
            " WHERE s.tablename = 'documents_chunk' AND s.attname = 'search_vector'"
            " AND s.schemaname = current_schema()"
        )
        row = cursor.fetchone()
    lexemes = []
    if row and row[0]:
        words, frequencies, rows = row
        lexemes = [w for w, f in zip(words, frequencies, strict=False) if f * rows > FREQUENT_ROWS]
    _frequent_cache = (time.monotonic(), lexemes)
    return lexemes


def vector_literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def statement_params(
    *,
    organization_id: uuid.UUID,
    data_source_ids: Sequence[uuid.UUID],
    question: str,
    candidate_k: int,
    top_k: int,
    analyzer: str,
) -> dict[str, Any]:
    """The parameters of the search statements, all but the question's vector."""
    return {
        "organization": organization_id,
        "data_sources": list(data_source_ids),
        "k": candidate_k,
        "analyzer": analyzer,
        "tsquery": or_tsquery(question),
        "question": question[:2000],
        "lexical_cap": LEXICAL_CANDIDATE_CAP,
        "frequent": frequent_lexemes() if data_source_ids else [],
        "rrf_k": RRF_K,
        "top": top_k,
    }


class HybridSearch:
    """One hybrid query whose full-text side starts as soon as it is created.

    Create it before embedding the question, then call :meth:`finish` with the
    vector: the full-text candidates are found meanwhile on a search thread.
    """

    def __init__(
        self,
        *,
        organization_id: uuid.UUID,
        data_source_ids: Sequence[uuid.UUID],
        question: str,
        candidate_k: int = 40,
        top_k: int = 8,
        analyzer: str = "english",
    ) -> None:
        self.params = statement_params(
            organization_id=organization_id,
            data_source_ids=data_source_ids,
            question=question,
            candidate_k=candidate_k,
            top_k=top_k,
            analyzer=analyzer,
        )
        self._lexical: Future[list[tuple[Any, ...]]] | None = None
        if not self.params["data_sources"]:
            return
        pool = None if connection.in_atomic_block else _search_pool()
        if pool is None:  # only this connection sees this transaction's rows: search in turn
            self._lexical = Future()
            self._lexical.set_result(_rows(_LEXICAL_SQL, self.params))
        else:
            self._lexical = pool.submit(_on_search_thread, _LEXICAL_SQL, dict(self.params))

    def finish(self, query_vector: Sequence[float]) -> list[SearchHit]:
        """Run the semantic side with ``query_vector`` and fuse both sides."""
        if self._lexical is None:
            return []
        params = dict(self.params, vector=vector_literal(query_vector))
        with transaction.atomic(savepoint=False):
            if self._lexical.done():  # usually, once the question is embedded
                self._lexical_into(params)
                rows = _rows(_SEMANTIC_FUSE_SQL, params)
            else:  # HNSW while the full-text side finishes, then fuse
                semantic = _rows(_SEMANTIC_SQL, params)
                params.update(
                    semantic_ids=[row[0] for row in semantic],
                    semantic_distances=[row[1] for row in semantic],
                )
                self._lexical_into(params)
                rows = _rows(_FUSE_SQL, params, configure=False)
        return [
            SearchHit(
                chunk_id=row[0],
                semantic_rank=row[1],
                lexical_rank=row[2],
                lexical_score=float(row[3]) if row[3] is not None else None,
                score_raw=float(row[4]),
                score_norm=float(row[5]),
                section=row[6],
            )
            for row in rows
        ]

    def _lexical_into(self, params: dict[str, Any]) -> None:
        lexical = self._lexical.result()
        params.update(
            lexical_ids=[row[0] for row in lexical], lexical_scores=[row[1] for row in lexical]
        )


def _rows(statement: str, params: dict[str, Any], *, configure: bool = True) -> list[tuple]:
    """``statement``'s rows on this thread's connection, prepared there on first use
    (in the caller's transaction if there is one: ``set_config(…, true)`` is local to it)."""
    with transaction.atomic(savepoint=False):
        connection.ensure_connection()
        with psycopg.Cursor(connection.connection) as cursor:
            if configure:
                cursor.execute(_SETTINGS, [str(EF_SEARCH), str(GIN_FUZZY_LIMIT)], prepare=True)
            cursor.execute(statement, params, prepare=True)
            return cursor.fetchall()


# --- search threads ------------------------------------------------------------------

_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_connections: list[Any] = []


def _search_pool() -> ThreadPoolExecutor | None:
    """The process's search threads (``PROVENANCE_SEARCH_THREADS``; 0 turns them off)."""
    global _pool
    size = settings.PROVENANCE_SEARCH_THREADS
    if size <= 0:
        return None
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="search")
        return _pool


def _on_search_thread(statement: str, params: dict[str, Any]) -> list[tuple]:
    """Run on a search thread, whose connection lives as long as the thread."""
    wrapper = connections["default"]
    if not any(known is wrapper for known in _pool_connections):
        _pool_connections.append(wrapper)
    wrapper.close_if_unusable_or_obsolete()  # CONN_MAX_AGE and health checks, as per request
    try:
        return _rows(statement, params)
    except Exception:
        wrapper.close_if_unusable_or_obsolete()
        raise


def search_threads_close() -> None:
    """Stop the search threads and close their connections (tests, before dropping a DB)."""
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=True)
    while _pool_connections:
        wrapper = _pool_connections.pop()
        wrapper.inc_thread_sharing()
        try:
            wrapper.close()
        finally:
            wrapper.dec_thread_sharing()
