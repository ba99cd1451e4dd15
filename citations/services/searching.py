"""One answer's retrieval: the app's index identity, the query-path embedder,
the hits above the app's threshold as passages, and a follow-up's answer vector."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from citations.generators import Passage
from citations.models import App
from citations.payload import citation_payload
from documents.fulltext import ANALYZER
from documents.models import Chunk
from retrieval.embedders import Embedder, default_embedder
from retrieval.models import VectorDatabase
from retrieval.search import HybridSearch, SearchHit


@dataclass(frozen=True)
class Retrieved:
    hit: SearchHit
    chunk: Chunk
    k_pos: int
    k_final: int


def _index_identity(app: App) -> tuple[str, str, str]:
    """(index_hash, embed_model, analyzer) of the app's vector database(s)."""
    databases = list(
        VectorDatabase.objects.filter(data_sources__apps=app).distinct().order_by("pk")
    )
    if len(databases) == 1:
        database = databases[0]
        return database.index_hash, database.embed_model_id, database.analyzer
    combined = hashlib.sha256("|".join(d.index_hash for d in databases).encode()).hexdigest()
    first = databases[0] if databases else None
    model = first.embed_model_id if first else ""
    return combined, model, first.analyzer if first else ANALYZER


@dataclass(frozen=True)
class Searcher:
    """One answer's retrieval: the app's index identity and the query-path embedder,
    so a stepped answer searches once per step exactly as a single answer does."""

    app: App
    embedder: Embedder
    index_hash: str
    embed_model: str
    analyzer: str

    def search(self, text: str) -> tuple[list[Retrieved], list[float]]:
        """The hits for ``text`` above the app's threshold, and the query vector."""
        search = HybridSearch(  # its full-text side runs while the question is embedded
            organization_id=self.app.organization_id,
            data_source_ids=list(self.app.data_sources.values_list("pk", flat=True)),
            question=text,
            candidate_k=self.app.candidate_k,
            top_k=self.app.top_k,
            analyzer=self.analyzer,
        )
        vector = self.embedder.embed_query(text)
        return _retrieve(self.app, search.finish(vector)), vector

    def passages(self, retrieved: list[Retrieved]) -> list[Passage]:
        return [
            _passage(i, r, self.index_hash, self.embed_model, self.analyzer)
            for i, r in enumerate(retrieved)
        ]

    def answer_vector(self, question: str, vector: list[float]) -> list[float]:
        return _answer_vector(self.embedder, question, vector)


def searcher_for(app: App) -> Searcher:
    index_hash, embed_model, analyzer = _index_identity(app)
    embedder = default_embedder()
    if embed_model and embed_model != f"{embedder.model_id}:{embedder.pooling}":
        # analyzer parity: vectors of another model cannot be compared with these
        raise RuntimeError(
            f"the index was built with {embed_model}, the query path uses "
            f"{embedder.model_id}:{embedder.pooling}; rebuild the index"
        )
    return Searcher(app, embedder, index_hash, embed_model, analyzer)


def _passage(index: int, r: Retrieved, index_hash: str, embed_model: str, analyzer: str) -> Passage:
    """A hit as a generator sees it: its text, a title naming document and section, and
    the citation payload it is recorded with (what a model must cite)."""
    payload = hit_payload(r, index_hash, embed_model, analyzer)
    return Passage(
        index, r.chunk.chunk_text, r.hit.score_norm, passage_title(r), payload, r.chunk.context
    )


def passage_title(r: Retrieved) -> str:
    """A passage's title: its document, and its section when it has one."""
    return f"{r.chunk.file.name} › {r.chunk.section}" if r.chunk.section else r.chunk.file.name


def hit_payload(
    r: Retrieved,
    index_hash: str,
    embed_model: str,
    analyzer: str,
    *,
    rerank_score: float | None = None,
) -> dict:
    return citation_payload(
        chunk=r.chunk,
        index_hash=index_hash,
        embed_model=embed_model,
        analyzer=analyzer,
        score_raw=r.hit.score_raw,
        score_norm=r.hit.score_norm,
        k_pos=r.k_pos,
        k_final=r.k_final,
        rerank_score=rerank_score,
    )


# how much the conversation counts, beside the latest question, when sentences are
# chosen for a follow-up's answer
CONTEXT_WEIGHT = 0.5


def _answer_vector(embedder: Embedder, question: str, conversation: list[float]) -> list[float]:
    """What a follow-up's sentences are compared with: the latest question, steered by
    the conversation. Retrieval uses the whole conversation ("its retention period"
    needs it), but sentences compared with it alone answer the earlier question again
    ("What about travel?" after an invoice question quoted the invoice rule)."""
    blend = np.asarray(embedder.embed_query(question)) + CONTEXT_WEIGHT * np.asarray(conversation)
    return (blend / max(float(np.linalg.norm(blend)), 1e-12)).tolist()


def _retrieve(app: App, hits: list[SearchHit]) -> list[Retrieved]:
    """The hits above the app's score threshold, with their chunks and positions."""
    chunks = Chunk.objects.select_related("file", "file__data_source").defer("embedding")
    by_id = chunks.in_bulk([h.chunk_id for h in hits])
    kept, retrieved = 0, []
    for k_pos, hit in enumerate(hits, start=1):
        if hit.score_norm >= app.min_score:
            kept += 1
            retrieved.append(Retrieved(hit, by_id[hit.chunk_id], k_pos, kept))
    return retrieved
