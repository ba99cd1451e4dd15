"""Hybrid retrieval in one SQL statement: pgvector cosine search (HNSW) and
Postgres full-text search, fused by reciprocal rank fusion.

Ranks are SQL ``rank()``: equal distances share a rank, so equal documents get
equal fused scores and the documented tiebreak (score_norm desc, section asc,
snippet_id asc) decides their order.

Filtering by organization and data sources happens inside the statement, on
columns of the chunk table itself, so the HNSW scan (iterative, pgvector 0.8)
never returns another tenant's rows. The lexical side is an OR of the
question's words over a bounded candidate set, so frequent words cannot make
ranking scan thousands of long chunks. Its filters are written
``(…) IS TRUE`` and ``coalesce(is_retrievable, false)`` so that no b-tree
(organization, the partial index of retrievable chunks) can serve them: with
one, the planner walks it testing the tsquery row by row, de-TOASTing each
tsvector (1-5 ms at 20k chunks); without, the GIN index finds the rows.
Each branch ranks its own rows, so the UNION deduplicates (id, score) pairs
instead of sorting tsvectors.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connection, transaction

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

_SQL = """
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
), semantic AS (
    SELECT c.id, c.embedding <=> %(vector)s::vector AS distance
    FROM documents_chunk c
    WHERE c.organization_id = %(organization)s
      AND c.data_source_id = ANY(%(data_sources)s)
      AND c.is_retrievable
    ORDER BY c.embedding <=> %(vector)s::vector
    LIMIT %(k)s
), semantic_ranked AS (
    SELECT id, rank() OVER (ORDER BY distance) AS rank FROM semantic
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
), lexical_ranked AS (
    SELECT id, score, rank() OVER (ORDER BY score DESC) AS rank
    FROM lexical ORDER BY score DESC, id LIMIT %(k)s
), fused AS (
    SELECT coalesce(s.id, l.id) AS id, s.rank AS semantic_rank, l.rank AS lexical_rank,
           l.score AS lexical_score,
           coalesce(1.0 / (%(rrf_k)s + s.rank), 0) + coalesce(1.0 / (%(rrf_k)s + l.rank), 0) AS rrf
    FROM semantic_ranked s FULL OUTER JOIN lexical_ranked l ON s.id = l.id
)
SELECT f.id, f.semantic_rank, f.lexical_rank, f.lexical_score, f.rrf,
       greatest(0, least(1, 1 - (c.embedding <=> %(vector)s::vector))) AS score_norm,
       c.section
FROM fused f JOIN documents_chunk c ON c.id = f.id
ORDER BY f.rrf DESC, score_norm DESC, c.section ASC, f.id::text ASC
LIMIT %(top)s
"""

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


def hybrid_search(
    *,
    organization_id: uuid.UUID,
    data_source_ids: Sequence[uuid.UUID],
    question: str,
    query_vector: Sequence[float],
    candidate_k: int = 40,
    top_k: int = 8,
    analyzer: str = "english",
) -> list[SearchHit]:
    """The top ``top_k`` chunks by RRF over semantic and full-text candidates."""
    if not data_source_ids:
        return []
    params = {
        "vector": vector_literal(query_vector),
        "organization": organization_id,
        "data_sources": list(data_source_ids),
        "k": candidate_k,
        "analyzer": analyzer,
        "tsquery": or_tsquery(question),
        "question": question[:2000],
        "lexical_cap": LEXICAL_CANDIDATE_CAP,
        "frequent": frequent_lexemes(),
        "rrf_k": RRF_K,
        "top": top_k,
    }
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_SETTINGS, [str(EF_SEARCH), str(GIN_FUZZY_LIMIT)])
        cursor.execute(_SQL, params)
        rows = cursor.fetchall()
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
