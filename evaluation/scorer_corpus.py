"""Documents made into passages as the answer path sees them, without a database:
the scorer's training set is built from what the real converters, chunker, record
contexts and embedder make of generated forms and SQuAD articles.

Conversion, chunking, contexts and embedding are the ingestion's own functions;
retrieval fuses a cosine ranking with a BM25 ranking of the same text by reciprocal
rank, as ``retrieval.search.HybridSearch`` does with pgvector and PostgreSQL's full
text (its lexical scores differ; the answer scorer's features read ranks and cosines,
which do not).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np
from django.conf import settings

from citations.generators import Passage
from citations.generators.extractive.scripts import stems
from documents.chunk_context import ChunkContexts, embedding_text
from documents.chunking import chunk_markdown
from documents.converters import converter_for
from documents.markdown_structure import MarkdownStructure
from retrieval.embedders import default_embedder
from retrieval.search import RRF_K

KINDS = {"pdf": "pdf", "docx": "docx", "html": "html", "md": "markdown", "json": "json"}


@dataclass(frozen=True)
class IndexedChunk:
    document: str
    text: str
    context: str
    title: str
    page_start: int | None
    page_end: int | None


class MemoryIndex:
    """Chunks of converted documents with their vectors and a BM25 ranking."""

    def __init__(self) -> None:
        self.chunks: list[IndexedChunk] = []
        self.vectors: list[np.ndarray] = []
        self.terms: list[Counter[str]] = []

    def add(self, name: str, data: bytes) -> None:
        kind = KINDS[name.rsplit(".", 1)[-1]]
        conversion = converter_for(kind).convert(data)
        structure = MarkdownStructure(conversion.markdown, body_start=conversion.body_start)
        spans = chunk_markdown(
            structure,
            target=settings.PROVENANCE_CHUNK_TARGET_TOKENS,
            overlap=settings.PROVENANCE_CHUNK_OVERLAP_TOKENS,
        )
        contexts = ChunkContexts(structure, document=name, line_pages=conversion.line_pages)
        made = []
        for span in spans:
            text = conversion.markdown[span.char_start : span.char_end]
            hierarchy = structure.hierarchy_at(span.char_start)
            section = " > ".join(hierarchy)
            pages: list[int] = [
                page
                for line in range(
                    structure.line_of(span.char_start), structure.line_of(span.char_end - 1) + 1
                )
                if 0 < line <= len(conversion.line_pages)
                and (page := conversion.line_pages[line - 1]) is not None
            ]
            made.append(
                IndexedChunk(
                    document=name,
                    text=text,
                    context=contexts.context(span.char_start, span.char_end, hierarchy=hierarchy),
                    title=f"{name} › {section}" if section else name,
                    page_start=min(pages) if pages else None,
                    page_end=max(pages) if pages else None,
                )
            )
        texts = [embedding_text(c.text, c.context) for c in made]
        self.vectors += [np.asarray(v) for v in default_embedder().embed_documents(texts)]
        self.terms += [Counter(_terms(t)) for t in texts]
        self.chunks += made

    def search(
        self, question: str, *, library: set[str], top_k: int = 10
    ) -> tuple[list[Passage], list[IndexedChunk], list[float]]:
        """The ``top_k`` passages for ``question`` among the documents of ``library``."""
        vector = np.asarray(default_embedder().embed_query(question))
        allowed = [n for n, c in enumerate(self.chunks) if c.document in library]
        cosine = {n: float(self.vectors[n] @ vector) for n in allowed}
        lexical = self._bm25(question, allowed)
        semantic_rank = {n: r for r, n in enumerate(sorted(allowed, key=lambda n: -cosine[n]), 1)}
        lexical_order = sorted((n for n in allowed if lexical[n] > 0), key=lambda n: -lexical[n])
        lexical_rank = {n: r for r, n in enumerate(lexical_order, 1)}
        fused = sorted(
            allowed,
            key=lambda n: (
                -(
                    1 / (RRF_K + semantic_rank[n])
                    + (1 / (RRF_K + lexical_rank[n]) if n in lexical_rank else 0)
                )
            ),
        )[:top_k]
        passages = [
            Passage(
                i,
                self.chunks[n].text,
                max(0.0, min(1.0, cosine[n])),
                self.chunks[n].title,
                None,
                self.chunks[n].context,
            )
            for i, n in enumerate(fused)
        ]
        return passages, [self.chunks[n] for n in fused], vector.tolist()

    def _bm25(self, question: str, allowed: list[int]) -> dict[int, float]:
        asked = set(_terms(question))
        count = len(allowed) or 1
        average = sum(sum(self.terms[n].values()) for n in allowed) / count
        frequency = Counter(t for n in allowed for t in asked if t in self.terms[n])
        scores = {}
        for n in allowed:
            terms, length = self.terms[n], sum(self.terms[n].values())
            score = 0.0
            for term in asked & terms.keys():
                idf = math.log(1 + (count - frequency[term] + 0.5) / (frequency[term] + 0.5))
                tf = terms[term]
                score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / (average or 1)))
            scores[n] = score
        return scores


def _terms(text: str) -> list[str]:
    return [s for word in text.split() for s in stems(word)]
