"""The answer streamed into the page as server-sent events: the status while the
documents are searched, then the answer sentence by sentence, then the whole
answer as the answer page renders it (which replaces the streamed sentences).

A model's sentences are sent as the model writes them, each once it is complete and
verified (:mod:`citations.generators.live`); ``reset`` clears them when the answer
turns out to be another reply (the model asked again, or the extractive fallback).
The extractive generator's sentences, and whatever was not sent live, are sent once
the answer is recorded, one event each.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from django.urls import reverse
from django.utils.html import escape

from citations.composition import compose_sentences
from citations.generators import Claim, ModelError
from citations.generators.live import Finished, Restart, live_events
from citations.models import QueryExecution
from citations.presentation import Marker, answer_html
from citations.services.questions import QueryRejected
from citations.services.searching import IndexMismatch
from citations.threads.errors import ThreadRejected
from citations.web.answers import AnswerPage, answer_page
from core.sse import sse

SEARCHING = "Searching the documents…"
WRITING = "Writing the answer…"
RESTARTED = "Checking the answer again…"


def sentence_pieces(page: AnswerPage, after: int = 0) -> list[str]:
    """The answer cut where each claim's sentence starts, each piece rendered with
    its own ``[n]`` links (the pieces from ``after`` on)."""
    answer = page.execution.answer
    starts = sorted(
        {0, *(c.reply_start for card in page.sources for c in card.source.claims.all())}
    )
    bounds = [s for s in starts if 0 <= s < len(answer)] + [len(answer)]
    pieces = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        inside = [
            Marker(m.at - start, m.quoted_as, m.href, m.label)  # previews live on its page
            for m in page.markers
            if start <= m.at < end
        ]
        if answer[start:end].strip() and start >= after:
            pieces.append(str(answer_html(answer[start:end], inside)))
    return pieces


def _whole(page: AnswerPage) -> str:
    """The answer as its page renders it, without the previews (they live there)."""
    markers = [replace(m, preview="") for m in page.markers]
    return str(answer_html(page.execution.answer, markers))


def _live_piece(shown: list[Claim], claims: tuple[Claim, ...]) -> str:
    """A verified sentence as the answer will hold it, its markers as plain ``[n]`` (the
    links are made once the answer is recorded)."""
    before = compose_sentences(shown).answer if shown else ""
    text = compose_sentences([*shown, *claims]).answer[len(before) :]
    return str(answer_html(text.lstrip(), []))


def answer_events(ask: Callable[[], QueryExecution]) -> Iterator[bytes]:
    """The events of one question: ``ask`` answers it (and records everything)."""
    yield sse("status", {"text": SEARCHING})
    shown: list[Claim] = []
    writing = False
    try:
        for event in live_events(ask):
            if isinstance(event, Finished):
                execution = event.value
            elif isinstance(event, Restart):
                shown = []
                yield sse("reset", {"text": RESTARTED})
            else:
                if not writing:
                    writing = True
                    yield sse("status", {"text": WRITING})
                yield sse("sentence", {"html": _live_piece(shown, event.claims)})
                shown += event.claims
    except (QueryRejected, ThreadRejected) as exc:
        yield sse("failed", {"text": exc.message.replace("'query'", "The question")})
        return
    except ModelError as exc:
        yield sse("failed", {"text": f"The model could not answer: {exc.message}"})
        return
    except IndexMismatch as exc:
        text = f"This app's documents cannot be searched as they are: {exc.message}"
        yield sse("failed", {"text": text})
        return
    if not writing:
        yield sse("status", {"text": WRITING})
    page = answer_page(execution=execution)
    sent = compose_sentences(shown).answer if shown else ""
    if sent and not execution.answer.startswith(sent):  # not the answer after all
        yield sse("reset", {"text": RESTARTED})
        sent = ""
    if page.sources:
        for piece in sentence_pieces(page, after=len(sent) if sent else 0):
            yield sse("sentence", {"html": piece})
    elif not sent:
        yield sse("sentence", {"html": f"<p>{escape(execution.answer)}</p>"})
    yield sse(
        "done",
        {
            "url": reverse("web-answer", args=[execution.pk]),
            "query_id": str(execution.pk),
            "follow_up_url": reverse("web-follow-up", args=[execution.pk]),
            "html": _whole(page) if page.sources else "",
            "text": "Answered: the sources are on the answer page.",
        },
    )
