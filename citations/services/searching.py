"""One answer's retrieval: the app's index identity, the query-path embedder,
the hits above the app's threshold as passages, and a follow-up's answer vector."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
from django.conf import settings

from citations.generators import Passage
from citations.models import App
from citations.payload import Window, citation_payload, snippet_windows
from core.exceptions import DomainRejected
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
    window: Window


class IndexMismatch(DomainRejected):
    """The app's index was built another way than this server reads it (the seed's
    analyzer parity, and the embed model's): answering would compare lexemes or vectors
    made differently, so the answer fails before anything is searched (409)."""

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message, code=code, status=409)


def _index_identity(app: App, read_analyzer: str) -> tuple[str, str, str]:
    """(index_hash, embed_model, analyzer) of the app's vector database(s), each of
    whose analyzer is the read path's (else :class:`IndexMismatch`)."""
    databases = list(
        VectorDatabase.objects.filter(data_sources__apps=app).distinct().order_by("pk")
    )
    for database in databases:
        _analyzer_parity(database, read_analyzer)
    if len(databases) == 1:
        database = databases[0]
        return database.index_hash, database.embed_model_id, database.analyzer
    combined = hashlib.sha256("|".join(d.index_hash for d in databases).encode()).hexdigest()
    first = databases[0] if databases else None
    model = first.embed_model_id if first else ""
    return combined, model, read_analyzer


def _analyzer_parity(database: VectorDatabase, read_analyzer: str) -> None:
    """The seed's rule 4: the analyzer the index's lexemes were made with is the one
    the question's are made with, or the run fails fast."""
    if database.analyzer != read_analyzer:
        raise IndexMismatch(
            f"the index {database.name!r} was built with the analyzer {database.analyzer!r} "
            f"and this server reads with {read_analyzer!r}: its full-text matches would "
            "compare words analysed differently. An index an earlier release wrote is "
            "brought to this analyzer by its migrations (manage.py migrate); otherwise "
            "answer with the release that built it",
            code="analyzer_mismatch",
        )


@dataclass(frozen=True)
class Searcher:
    """One answer's retrieval: the app's index identity and the query-path embedder,
    so a stepped answer searches once per step exactly as a single answer does."""

    app: App
    embedder: Embedder
    index_hash: str
    embed_model: str
    analyzer: str
    # the origin its payloads' source_url are absolute on
    base_url: str

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
        return [_passage(i, r, self.payload(r)) for i, r in enumerate(retrieved)]

    def payload(self, r: Retrieved) -> dict:
        """The citation payload of one hit, as issued to the generator and recorded."""
        return citation_payload(
            chunk=r.chunk,
            index_hash=self.index_hash,
            embed_model=self.embed_model,
            analyzer=self.analyzer,
            score_raw=r.hit.score_raw,
            score_norm=r.hit.score_norm,
            k_pos=r.k_pos,
            k_final=r.k_final,
            window=r.window,
            base_url=self.base_url,
        )

    def answer_vector(self, question: str, vector: list[float]) -> list[float]:
        return _answer_vector(self.embedder, question, vector)


def searcher_for(
    app: App, *, base_url: str | None = None, read_analyzer: str = ANALYZER
) -> Searcher:
    """The app's searcher, once its index is read as it was built: the analyzer (the
    read path's is ``documents.fulltext.ANALYZER``) and the embed model; else
    :class:`IndexMismatch`. ``base_url``: the request's origin, else the configured
    ``PROVENANCE_PUBLIC_URL`` (a task or a command has no request)."""
    index_hash, embed_model, analyzer = _index_identity(app, read_analyzer)
    embedder = default_embedder()
    if embed_model and embed_model != f"{embedder.model_id}:{embedder.pooling}":
        # vectors of another model cannot be compared with these
        raise IndexMismatch(
            f"the index was built with the embed model {embed_model!r} and this server "
            f"embeds questions with {embedder.model_id}:{embedder.pooling}: rebuild the "
            "index with this model (re-ingest its documents), then ask again",
            code="embed_model_mismatch",
        )
    return Searcher(
        app=app,
        embedder=embedder,
        index_hash=index_hash,
        embed_model=embed_model,
        analyzer=analyzer,
        base_url=base_url or settings.PROVENANCE_PUBLIC_URL,
    )


def _passage(index: int, r: Retrieved, payload: dict) -> Passage:
    """A hit as a generator sees it: its text, a title naming document and section, and
    the citation payload it is recorded with (what a model must cite)."""
    return Passage(
        index, r.chunk.chunk_text, r.hit.score_norm, passage_title(r), payload, r.chunk.context
    )


def passage_title(r: Retrieved) -> str:
    """A passage's title: its document, and its section when it has one."""
    return f"{r.chunk.file.name} › {r.chunk.section}" if r.chunk.section else r.chunk.file.name


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
    kept_hits = [
        (k_pos, h) for k_pos, h in enumerate(hits, start=1) if h.score_norm >= app.min_score
    ]
    by_id = chunks.in_bulk([h.chunk_id for _, h in kept_hits])
    windows = snippet_windows(list(by_id.values()))
    return [
        Retrieved(hit, by_id[hit.chunk_id], k_pos, k_final, windows[hit.chunk_id])
        for k_final, (k_pos, hit) in enumerate(kept_hits, start=1)
    ]
