"""The answer page's content: the answer with linked ``[n]`` markers, one card
per quoted source (as recorded at answer time) and the uncited hits."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import zip_longest

from django.urls import reverse
from django.utils.safestring import SafeString

from citations.model_evidence import written_by
from citations.models import (
    ClaimCheck,
    ClaimCitation,
    QueryExecution,
    QueryStatus,
    QuotedSource,
    RetrievalHit,
)
from citations.places import Place, quoted_places
from citations.presentation import Marker, answer_html
from citations.reasoning.selectors import ReasoningPage, reasoning_page
from citations.services.writing import fallback_meaning
from citations.threads.sources import marker_start
from citations.web.rendering import passage_html
from citations.web.selectors import (
    DocumentState,
    document_states,
    quoted_sources_for_page,
    uncited_hits_of,
)
from citations.web.viewer import anchor_of, unit_of


@dataclass(frozen=True)
class SourceCard:
    source: QuotedSource
    passage: SafeString
    viewer_url: str
    download_url: str
    unit: str
    state: DocumentState
    places: list[Place]

    @property
    def sections(self) -> list[str]:
        """The sections of the quoted sentences, first use first; the chunk's own
        when none is known (a chunk that starts in a tiny section takes in the next)."""
        found = list(dict.fromkeys(place.section for place in self.places))
        return found or [self.source.section]


@dataclass(frozen=True)
class HitCard:
    hit: RetrievalHit
    passage: SafeString
    viewer_url: str
    download_url: str
    unit: str


@dataclass(frozen=True)
class Preview:
    """What hovering or focusing one ``[n]`` shows: the quoted sentence and where it is."""

    id: str
    quoted_as: str
    sentence: SafeString
    document: str
    unit: str
    page: int | None
    section: str
    crop_url: str  # a PDF's highlighted region, else ""


@dataclass(frozen=True)
class AnswerPage:
    execution: QueryExecution
    answer: SafeString
    sources: list[SourceCard]
    uncited: list[HitCard]
    written_by: str = ""
    unsupported: tuple[ClaimCheck, ...] = ()
    reasoning: ReasoningPage | None = None
    previews: tuple[Preview, ...] = ()
    markers: tuple[Marker, ...] = ()

    @property
    def by_model(self) -> bool:
        return self.written_by not in ("", "extractive")

    @property
    def fallback(self) -> str:
        """Why the app's model did not write this answer, in words ("" when it did)."""
        reason = self.execution.fallback_reason
        return fallback_meaning(reason) if reason else ""

    @property
    def not_found(self) -> bool:
        return self.execution.status == QueryStatus.COMPLETED and not self.sources

    @property
    def failed(self) -> bool:
        return self.execution.status == QueryStatus.FAILED

    @property
    def changed(self) -> bool:
        return any(card.state.changed for card in self.sources)


def source_url(source: QuotedSource, *, place: Place | None = None) -> str:
    """The viewer of ``[n]``, scrolled to a quoted sentence's page or line (the
    chunk's start when not given)."""
    base = reverse("web-source", args=[source.query_id, source.quoted_as])
    page, line = (
        (place.page, place.line) if place else (source.page_start, source.line_number_start)
    )
    return f"{base}#{anchor_of(kind=source.file.kind, page=page, line=line)}"


def _source_card(*, source: QuotedSource, state: DocumentState) -> SourceCard:
    places = quoted_places(source=source)
    return SourceCard(
        source=source,
        passage=passage_html(
            source.chunk_text, [(c.source_start, c.source_end) for c in source.claims.all()]
        ),
        viewer_url=source_url(source, place=places[0] if places else None),
        download_url=reverse("file-content", args=[source.file_id]),
        unit=unit_of(source.file.kind),
        state=state,
        places=places,
    )


def answer_page(*, execution: QueryExecution) -> AnswerPage:
    sources = quoted_sources_for_page(execution=execution)
    states = document_states(s.file for s in sources)
    cards = [_source_card(source=s, state=states[s.file_id]) for s in sources]
    # each [n] opens the viewer at the sentence it stands for (places follow the claims)
    markers, previews = [], []
    for card in cards:
        for claim, place in zip_longest(card.source.claims.all(), card.places):
            if claim is None:
                continue
            preview = _preview(card, claim, place)
            previews.append(preview)
            markers.append(
                Marker(
                    at=_marker_at(execution.answer, claim.reply_end, card.source.quoted_as),
                    quoted_as=card.source.quoted_as,
                    href=source_url(card.source, place=place) if place else card.viewer_url,
                    label=f"Source {card.source.quoted_as}: {card.source.document_name}",
                    preview=preview.id,
                )
            )
    return AnswerPage(
        execution=execution,
        previews=tuple(previews),
        markers=tuple(markers),
        answer=answer_html(execution.answer, markers),
        sources=cards,
        uncited=[_hit_card(execution, hit) for hit in uncited_hits_of(execution=execution)],
        written_by=written_by(execution),
        unsupported=tuple(unsupported_claims_of(execution=execution)),
        reasoning=reasoning_page(execution=execution, viewer=source_url),
    )


def crop_url(source: QuotedSource, *, segment: int, route: str = "web-source-crop") -> str:
    """The highlighted region of a PDF source around one claim, or "" for other kinds
    (``route``: the reader's own crop, or the officers' in the admin)."""
    if source.file.kind != "pdf":
        return ""
    base = reverse(route, args=[source.query_id, source.quoted_as])
    return f"{base}?claim={segment}"


def _preview(card: SourceCard, claim: ClaimCitation, place: Place | None) -> Preview:
    source = card.source
    return Preview(
        id=f"preview-{source.quoted_as}-{claim.segment}",
        quoted_as=source.quoted_as,
        sentence=passage_html(claim.source_sentence, []),
        document=source.document_name,
        unit=card.unit,
        page=place.page if place else source.page_start,
        section=place.section if place else source.section,
        crop_url=crop_url(source, segment=claim.segment),
    )


def _marker_at(answer: str, reply_end: int, quoted_as: str) -> int:
    """Where `` [n]`` stands after its claim (a sentence citing several sources is
    followed by several markers); the claim's end when it is not found."""
    start = marker_start(answer, reply_end, f"[{quoted_as}]")
    return start - 1 if start is not None else reply_end


def unsupported_claims_of(*, execution: QueryExecution) -> list[ClaimCheck]:
    """The sentences of a model's reply that were left out of the answer, one per
    sentence (its first reason), in reply order."""
    checks = ClaimCheck.objects.filter(query=execution).order_by("sentence", "id")
    supported = {c.sentence for c in checks if c.supported}
    first: dict[int, ClaimCheck] = {}
    for check in checks:
        if check.sentence not in supported:
            first.setdefault(check.sentence, check)
    return list(first.values())


def _hit_card(execution: QueryExecution, hit: RetrievalHit) -> HitCard:
    base = reverse("web-hit", args=[execution.pk, hit.k_pos])
    anchor = anchor_of(
        kind=hit.file.kind, page=hit.chunk.page_start, line=hit.chunk.line_number_start
    )
    return HitCard(
        hit=hit,
        passage=passage_html(hit.chunk.chunk_text, []),
        viewer_url=f"{base}#{anchor}",
        download_url=reverse("file-content", args=[hit.file_id]),
        unit=unit_of(hit.file.kind),
    )
