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
fused statement with its vector literal of several KB would otherwise be paid on
every question, a cost of the order of the search itself.

Ranks are SQL ``rank()``: equal distances share a rank, so equal documents get
equal fused scores and the documented tiebreak (score_norm desc, section asc,
snippet_id asc) decides their order.

Filtering by organization and data sources happens inside each candidate
statement: on the chunk table's own columns for HNSW, so the scan (iterative,
pgvector 0.8) never returns another tenant's rows; on the postings' data source
and then the chunk's organization and retrievability for the full-text side.

The full-text side ranks by BM25 over the question's lexemes (the analyzer's
``to_tsvector``), from the weight-ordered postings of ``LexicalPosting``: each
word's ``PER_WORD_POSTINGS`` best chunks per data source are one index range,
however many chunks hold the word, and a word's document frequency is counted
from that range when it is shorter, else estimated from ANALYZE's statistics.
A chunk's sum over the lists it appears in is a lower bound of its BM25 score;
the ``RESCORED_CANDIDATES`` best are summed again from their own postings
(primary-key probes), so every score returned is the chunk's whole BM25 score.
Document frequencies are exact up to ``COUNT_CAP`` chunks per source and
estimated past it. Ranking reads no tsvector, and the candidates are the
best-ranked matches, not the first ones in table order (``bench/
retrieval_latency.py`` reports the top-40 overlap with BM25 over every posting).
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg
from django.conf import settings
from django.db import connection, connections, transaction

from documents.fulltext import ANALYZER, SCRIPT_BOUNDARY, text_search_config

T = TypeVar("T")

RRF_K = 60
# HNSW's recall at a fixed ef_search falls as the graph grows (bench/results: recall@10
# 0.986 at 100k chunks but 0.90 at 1M for 128), so ef_search grows with the index:
# EF_SEARCH up to EF_SEARCH_BASE_CHUNKS, then with the square root of the size
EF_SEARCH = 128
EF_SEARCH_BASE_CHUNKS = 100_000
EF_SEARCH_MAX = 512
# each word's best-weighted postings read per data source
PER_WORD_POSTINGS = 100
# such a word's chunks are counted up to this many per source, then estimated
COUNT_CAP = 200
MAX_QUERY_WORDS = 64  # the first ones of the question
RESCORED_CANDIDATES = 60
STATISTICS_TTL_SECONDS = 300.0
CACHED_SIZE_MINIMUM = 10_000  # fewer chunks are counted per question (cheap at that size)
HNSW_INDEX = "chunk_embedding_hnsw_half"  # documents.models.Chunk.Meta.indexes

# one round trip; index scans only
_SETTINGS = """
SELECT set_config('hnsw.ef_search', %s, true),
       set_config('hnsw.iterative_scan', 'strict_order', true),
       set_config('enable_seqscan', 'off', true)
"""

# the question's lexemes (the analyzer's, by Postgres) in the order they first appear,
# split at script boundaries as the chunks' are (documents/fulltext.py)
_WORDS_SQL = """
SELECT coalesce(array_agg(t.lexeme ORDER BY t.positions[1], t.lexeme), '{}')
FROM unnest(to_tsvector(
    %(analyzer)s::regconfig, regexp_replace(%(question)s, %(script_boundary)s, ' ', 'g')
)) AS t
"""

# the full-text candidates: BM25 over the question's lexemes, summed over each word's
# best postings; idf = ln((N + 1) / (df + 0.5)) with N the data sources' chunks
_LEXICAL_SQL = """
WITH words AS (
    SELECT unnest(%(words)s::text[]) AS word
), best AS (
    SELECT w.word, s.id AS source, p.chunk_id, p.weight
    FROM words w
    CROSS JOIN unnest(%(data_sources)s::uuid[]) AS s(id)
    CROSS JOIN LATERAL (
        SELECT chunk_id, weight FROM retrieval_lexicalposting
        WHERE data_source_id = s.id AND lexeme = w.word COLLATE "C"
        ORDER BY weight DESC, chunk_id
        LIMIT %(per_word)s
    ) p
), listed AS (
    SELECT word, source, count(*) AS listed FROM best GROUP BY word, source
), frequency AS MATERIALIZED (
    -- a list cut off at the limit: the word's chunks in that source counted, up to a cap
    SELECT l.word,
           CASE WHEN l.listed < %(per_word)s THEN l.listed
                ELSE (SELECT count(*) FROM (
                          SELECT 1 FROM retrieval_lexicalposting p
                          WHERE p.data_source_id = l.source AND p.lexeme = l.word COLLATE "C"
                          LIMIT %(count_cap)s) AS capped)
           END AS df
    FROM listed l
), idf AS (
    -- past the cap, ANALYZE's share of chunks holding the word, times N
    SELECT f.word,
           ln((%(chunks)s::float8 + 1) / (least(
               CASE WHEN max(f.df) >= %(count_cap)s
                    THEN greatest(sum(f.df)::float8, coalesce(max(e.share), 0) * %(chunks)s)
                    ELSE sum(f.df)::float8 END,
               %(chunks)s::float8) + 0.5)) AS idf
    FROM frequency f
    LEFT JOIN unnest(%(estimated_words)s::text[], %(estimated_shares)s::float8[]) AS e(word, share)
        ON e.word = f.word
    GROUP BY f.word
), partial AS (
    -- a chunk's sum over the lists it is in: all its words' weights for most
    SELECT b.chunk_id, sum(b.weight * i.idf) AS score
    FROM best b JOIN idf i ON i.word = b.word
    GROUP BY b.chunk_id
    ORDER BY score DESC, b.chunk_id
    LIMIT greatest(%(rescored)s, %(k)s)
), scored AS (
    -- the leaders' exact sums, from their own postings of the question's words
    SELECT t.chunk_id, exact.score
    FROM partial t
    JOIN documents_chunk c ON c.id = t.chunk_id
    CROSS JOIN LATERAL (
        SELECT sum(p.weight * i.idf) AS score
        FROM retrieval_lexicalposting p JOIN idf i ON i.word = p.lexeme
        WHERE p.chunk_id = t.chunk_id AND p.lexeme = ANY(%(words)s::text[] COLLATE "C")
    ) exact
    WHERE c.organization_id = %(organization)s AND c.is_retrievable
    ORDER BY exact.score DESC, t.chunk_id
    LIMIT %(k)s
)
SELECT chunk_id, score FROM scored ORDER BY score DESC, chunk_id
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


_statistics: dict[Any, tuple[float, Any]] = {}


def _remembered(
    key: Any, compute: Callable[[], T], *, keep: Callable[[T], bool] = lambda _: True
) -> T:
    """``compute()``, reused in this process for ``STATISTICS_TTL_SECONDS`` unless
    ``keep`` refuses the value."""
    cached = _statistics.get(key)
    if cached and time.monotonic() - cached[0] < STATISTICS_TTL_SECONDS:
        return cached[1]
    value = compute()
    if keep(value):
        if len(_statistics) > 1000:
            _statistics.clear()
        _statistics[key] = (time.monotonic(), value)
    return value


def common_lexemes() -> dict[str, float]:
    """The share of chunks holding each lexeme ANALYZE finds in more than
    ``COUNT_CAP`` chunks: a document frequency past the counting cap.

    Postgres samples each tsvector column's most common lexemes and their
    frequencies over the whole table; the share is applied to the app's own N.
    A question sends only its own words' shares (sending all of them would slow
    every statement).
    """
    return _remembered("common lexemes", _common_lexemes_read)


def _common_lexemes_read() -> dict[str, float]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples"
            " FROM pg_stats s JOIN pg_class c ON c.relname = s.tablename"
            " WHERE s.tablename = 'documents_chunk' AND s.attname = 'search_vector'"
            " AND s.schemaname = current_schema()"
        )
        row = cursor.fetchone()
    if not (row and row[0]):
        return {}
    words, frequencies, rows = row  # the frequencies end with 3 extra numbers
    return {w: f for w, f in zip(words, frequencies, strict=False) if f * rows > COUNT_CAP}


def retrievable_chunks(data_source_ids: Sequence[uuid.UUID]) -> int:
    """How many retrievable chunks the data sources hold (BM25's N), remembered
    once it is large enough to be costly to count: it only scales idf, but a
    stale small count (a source queried empty, then filled) would flatten idf
    for minutes."""

    def count() -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM documents_chunk"
                " WHERE data_source_id = ANY(%s::uuid[]) AND is_retrievable",
                [list(data_source_ids)],
            )
            return cursor.fetchone()[0]

    key = ("retrievable chunks", *sorted(str(i) for i in data_source_ids))
    return _remembered(key, count, keep=lambda size: size >= CACHED_SIZE_MINIMUM)


def ef_search_for(indexed: int) -> int:
    """The ``hnsw.ef_search`` for a graph of ``indexed`` chunks."""
    scale = math.sqrt(max(indexed, 0) / EF_SEARCH_BASE_CHUNKS)
    return min(EF_SEARCH_MAX, max(EF_SEARCH, round(EF_SEARCH * scale)))


def indexed_chunks() -> int:
    """The HNSW graph's size: PostgreSQL's estimate of the partial index's entries
    (kept by VACUUM, ANALYZE and autovacuum; every tenant's retrievable chunks are in
    one graph), remembered for ``STATISTICS_TTL_SECONDS``."""

    def read() -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT greatest(CASE WHEN i.reltuples >= 0 THEN i.reltuples"
                " ELSE t.reltuples END, 0)::bigint FROM pg_class i"
                " JOIN pg_index x ON x.indexrelid = i.oid JOIN pg_class t ON t.oid = x.indrelid"
                " WHERE i.relname = %s AND i.relnamespace = current_schema()::regnamespace",
                [HNSW_INDEX],
            )
            row = cursor.fetchone()
        return int(row[0]) if row else 0

    return _remembered("indexed chunks", read)


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
        "analyzer": text_search_config(analyzer),
        "question": question[:2000],
        "script_boundary": SCRIPT_BOUNDARY,
        "per_word": PER_WORD_POSTINGS,
        "rescored": RESCORED_CANDIDATES,
        "count_cap": COUNT_CAP,
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
        analyzer: str = ANALYZER,
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
            self._lexical.set_result(lexical_rows(self.params))
        else:
            self._lexical = pool.submit(_on_search_thread, dict(self.params))

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
        assert self._lexical is not None  # started with the search
        lexical = self._lexical.result()
        params.update(
            lexical_ids=[row[0] for row in lexical], lexical_scores=[row[1] for row in lexical]
        )


def lexical_rows(params: dict[str, Any]) -> list[tuple]:
    """The full-text candidates (chunk id, BM25 score) on this thread's connection."""
    with transaction.atomic(savepoint=False):
        ranking = lexical_params(params)
        return [] if ranking is None else _rows(_LEXICAL_SQL, ranking, configure=False)


def lexical_params(params: dict[str, Any]) -> dict[str, Any] | None:
    """The ranking statement's parameters: the question's first lexemes, N, and
    ANALYZE's shares for just those words; None if the question has no words."""
    words = _rows(_WORDS_SQL, params, configure=False)[0][0][:MAX_QUERY_WORDS]
    if not words:
        return None
    shares = common_lexemes()
    estimated = [word for word in words if word in shares]
    return params | {
        "words": words,
        "chunks": retrievable_chunks(params["data_sources"]),
        "estimated_words": estimated,
        "estimated_shares": [shares[word] for word in estimated],
    }


def _rows(statement: str, params: dict[str, Any], *, configure: bool = True) -> list[tuple]:
    """``statement``'s rows on this thread's connection, prepared there on first use
    (in the caller's transaction if there is one: ``set_config(…, true)`` is local to it)."""
    with transaction.atomic(savepoint=False):
        connection.ensure_connection()
        with psycopg.Cursor(connection.connection) as cursor:
            if configure:
                ef = ef_search_for(indexed_chunks())
                cursor.execute(_SETTINGS, [str(ef)], prepare=True)
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


def _on_search_thread(params: dict[str, Any]) -> list[tuple]:
    """Run on a search thread, whose connection lives as long as the thread."""
    wrapper = connections["default"]
    if not any(known is wrapper for known in _pool_connections):
        _pool_connections.append(wrapper)
    wrapper.close_if_unusable_or_obsolete()  # CONN_MAX_AGE and health checks, as per request
    try:
        return lexical_rows(params)
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
