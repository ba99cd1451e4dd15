"""The provenance-records API: a citation record of one answer (what was asked,
which units were retrieved and how they ranked), claim citations (a span of the
answer ↔ the document passage that says it) and their Markdown renderings, built
from the stored evidence so a rendering never says more than was recorded.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass

from django.urls import reverse

from citations.markers import quoted_text_neutralise
from citations.models import ClaimCitation as StoredClaim
from citations.models import QueryExecution, RetrievalHit
from citations.presentation import answer_markdown as readable_markdown

DEFAULT_EXCERPT_CHARS = 200


@dataclass(frozen=True)
class CitedSource:
    """One retrieved document: its path in the corpus, its category (the data source),
    the retriever's score, an optional excerpt, and links to the chunk and the file."""

    template_path: str
    category: str
    score: float
    excerpt: str | None = None
    chunk_url: str | None = None
    file_url: str | None = None


@dataclass(frozen=True)
class CitationRecord:
    """What was retrieved for one query, when and by which retriever."""

    query: str
    hits: tuple[CitedSource, ...]
    retrieved_at: datetime.datetime
    retriever_name: str


@dataclass(frozen=True)
class ClaimCitation:
    """``text[response_span[0]:response_span[1]]`` is said by ``cited_text`` of the
    ``document_index``-th retrieved document (block ``cited_block_index`` when the
    provider cited content blocks)."""

    response_span: tuple[int, int]
    document_index: int
    document_title: str
    cited_text: str
    cited_block_index: int | None = None
    url: str | None = None


def _excerpt(text: str, limit: int) -> str | None:
    if limit <= 0:
        return None
    return text if len(text) <= limit else text[:limit].rstrip() + "…"


def _chunk_url(hit: RetrievalHit) -> str:
    return reverse("chunk-detail", args=[hit.chunk.vector_database_id, hit.chunk_id])


def build_citation_record(
    query: str,
    hits: Sequence[RetrievalHit],
    *,
    retriever_name: str,
    retrieved_at: datetime.datetime,
    excerpt_chars: int = DEFAULT_EXCERPT_CHARS,
) -> CitationRecord:
    """A record of ``hits`` (in rank order), each with up to ``excerpt_chars`` of its text."""
    sources = tuple(
        CitedSource(
            template_path=hit.file.name,
            category=hit.file.data_source.name,
            score=hit.score_norm,
            excerpt=_excerpt(hit.chunk.chunk_text, excerpt_chars),
            chunk_url=_chunk_url(hit),
            file_url=reverse("file-content", args=[hit.file_id]),
        )
        for hit in hits
    )
    return CitationRecord(query, sources, retrieved_at, retriever_name)


def citation_record_of(
    execution: QueryExecution, *, excerpt_chars: int = DEFAULT_EXCERPT_CHARS
) -> CitationRecord:
    hits = execution.hits.select_related("chunk", "file__data_source").order_by("k_pos")
    return build_citation_record(
        execution.question,
        list(hits),
        retriever_name=execution.retriever,
        retrieved_at=execution.created_at,
        excerpt_chars=excerpt_chars,
    )


def claim_citations_of(execution: QueryExecution) -> list[ClaimCitation]:
    """The answer's claim citations; document indexes count the retrieved units from 0."""
    rows = (
        StoredClaim.objects.filter(query=execution)
        .select_related("quoted_source__hit__chunk")
        .prefetch_related("checks")
        .order_by("segment")
    )
    # a document's index is its place in the citation record (retrieval order), not
    # k_final, which is the answer scorer's order of the same hits
    place = {
        hit_id: n
        for n, hit_id in enumerate(execution.hits.order_by("k_pos").values_list("pk", flat=True))
    }
    claims = []
    for row in rows:
        source, check = row.quoted_source, next(iter(row.checks.all()), None)
        title = (
            f"{source.document_name} › {source.section}" if source.section else source.document_name
        )
        claims.append(
            ClaimCitation(
                response_span=(row.reply_start, row.reply_end),
                document_index=place[source.hit_id],
                document_title=title,
                cited_text=row.source_sentence,
                cited_block_index=check.cited_block_index if check else None,
                url=_chunk_url(source.hit),
            )
        )
    return claims


def _link(path: str | None, base_url: str | None) -> str | None:
    if path is None:
        return None
    return f"{base_url.rstrip('/')}{path}" if base_url else path


def _label(text: str) -> str:
    return quoted_text_neutralise(" ".join(text.split()))


def _quote(text: str) -> str:
    """A document's words in the report: neutralised, its web and mail links links."""
    return readable_markdown(_label(text))


def format_citations_markdown(record: CitationRecord, base_url: str | None = None) -> str:
    """The record as a Markdown section: the query, then each source with its links,
    category, score and excerpt (as a quote whose brackets cannot form links)."""
    lines = [
        "## Sources",
        "",
        f"Query: {_label(record.query)}  ",
        f"Retrieved by {record.retriever_name} at {record.retrieved_at.isoformat()}",
        "",
    ]
    for number, hit in enumerate(record.hits, start=1):
        name = _label(hit.template_path)
        file_link = _link(hit.file_url, base_url)
        title = f"[{name}]({file_link})" if file_link else name
        chunk_link = _link(hit.chunk_url, base_url)
        chunk = f" ([chunk]({chunk_link}))" if chunk_link else ""
        lines.append(f"{number}. {title}{chunk} — {_label(hit.category)}, score {hit.score:.3f}")
        if hit.excerpt:
            lines.append(f"   > {_quote(hit.excerpt)}")
    return "\n".join(lines) + "\n"


def format_claim_citations_markdown(
    text: str, claims: Sequence[ClaimCitation], base_url: str | None = None
) -> str:
    """``text`` with a footnote callout after each cited span, and the footnotes: the
    document (linked) and the words it says; quoted web and mail links are links."""
    ends: dict[int, list[int]] = {}
    for number, claim in enumerate(claims, start=1):
        ends.setdefault(claim.response_span[1], []).append(number)
    pieces, cursor = [], 0  # the answer's links restored piece by piece: offsets hold
    for end in sorted(ends):
        pieces += [readable_markdown(text[cursor:end]), "".join(f"[^{n}]" for n in ends[end])]
        cursor = end
    body = "".join([*pieces, readable_markdown(text[cursor:])])
    notes = []
    for number, claim in enumerate(claims, start=1):
        link = _link(claim.url, base_url)
        title = _label(claim.document_title)
        named = f"[{title}]({link})" if link else title
        notes.append(f'[^{number}]: {named} — "{_quote(claim.cited_text)}"')
    return body + ("\n\n" + "\n".join(notes) if notes else "") + "\n"


def answer_markdown(
    execution: QueryExecution,
    *,
    base_url: str | None = None,
    excerpt_chars: int = DEFAULT_EXCERPT_CHARS,
) -> str:
    """An answer as Markdown: its text with claim footnotes, then its citation record."""
    claims = format_claim_citations_markdown(
        execution.answer, claim_citations_of(execution), base_url
    )
    record = citation_record_of(execution, excerpt_chars=excerpt_chars)
    return f"{claims}\n{format_citations_markdown(record, base_url)}"
