"""The answer streamed into the page as server-sent events: the status while the
documents are searched, then the answer sentence by sentence, then the whole
answer as the answer page renders it (which replaces the streamed sentences).

The generators return a whole answer at once, so the sentences are sent as soon
as the answer is recorded, one event each; the page shows them as they arrive.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from django.urls import reverse
from django.utils.html import escape

from citations.generators import ModelError
from citations.models import QueryExecution
from citations.presentation import Marker, answer_html
from citations.services.questions import QueryRejected
from citations.threads.errors import ThreadRejected
from citations.web.answers import AnswerPage, answer_page
from core.sse import sse

SEARCHING = "Searching the documents…"
WRITING = "Writing the answer…"


def sentence_pieces(page: AnswerPage) -> list[str]:
    """The answer cut where each claim's sentence starts, each piece rendered with
    its own ``[n]`` links."""
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
        if answer[start:end].strip():
            pieces.append(str(answer_html(answer[start:end], inside)))
    return pieces


def _whole(page: AnswerPage) -> str:
    """The answer as its page renders it, without the previews (they live there)."""
    markers = [replace(m, preview="") for m in page.markers]
    return str(answer_html(page.execution.answer, markers))


def answer_events(ask: Callable[[], QueryExecution]) -> Iterator[bytes]:
    """The events of one question: ``ask`` answers it (and records everything)."""
    yield sse("status", {"text": SEARCHING})
    try:
        execution = ask()
    except (QueryRejected, ThreadRejected) as exc:
        yield sse("failed", {"text": exc.message.replace("'query'", "The question")})
        return
    except ModelError as exc:
        yield sse("failed", {"text": f"The model could not answer: {exc.message}"})
        return
    yield sse("status", {"text": WRITING})
    page = answer_page(execution=execution)
    if page.sources:
        for piece in sentence_pieces(page):
            yield sse("sentence", {"html": piece})
    else:
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
