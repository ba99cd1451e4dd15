"""Server-sent events of a response (``"stream": true``), in the Responses API's
names and order, each with its ``sequence_number``: the response opens, the
``file_search_call`` item searches while the answer is made, then the ``message``
item's text arrives as ``response.output_text.delta`` pieces, each annotation
right after the piece that completes its marker, and ``response.completed``
carries the same object a ``GET`` answers."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from itertools import count
from typing import Any

from citations.models import ResponseRecord, ResponseStatus
from citations.responses import output, services
from citations.threads.streaming import text_pieces
from core.sse import sse

logger = logging.getLogger(__name__)


class _Events:
    """Numbers each event as it is written."""

    def __init__(self) -> None:
        self.numbers = count()

    def __call__(self, kind: str, **fields: Any) -> bytes:
        return sse(kind, {"type": kind, "sequence_number": next(self.numbers), **fields})


def _text_events(event: _Events, item_id: str, part: dict[str, Any]) -> Iterator[bytes]:
    place = {"item_id": item_id, "output_index": 1, "content_index": 0}
    text, annotations = part["text"], part["annotations"]
    ends = [a["index"] + len(a["text"]) for a in annotations]
    pending = sorted(enumerate(annotations), key=lambda item: ends[item[0]])
    for start, piece in text_pieces(text, ends):
        yield event("response.output_text.delta", **place, delta=piece, logprobs=[])
        end = start + len(piece)
        for index, annotation in [(i, a) for i, a in pending if ends[i] <= end]:
            yield event(
                "response.output_text.annotation.added",
                **place,
                annotation_index=index,
                annotation=annotation,
            )
        pending = [(i, a) for i, a in pending if ends[i] > end]
    yield event("response.output_text.done", **place, text=text, logprobs=[])


def _answer_events(
    event: _Events, record: ResponseRecord, final: dict[str, Any]
) -> Iterator[bytes]:
    searched, message = final["output"]
    search = {"output_index": 0, "item_id": searched["id"]}
    yield event("response.file_search_call.completed", **search)
    yield event("response.output_item.done", output_index=0, item=searched)
    opened = output.message_item(record, [], "in_progress")
    yield event("response.output_item.added", output_index=1, item=opened)
    part = message["content"][0]
    place = {"item_id": message["id"], "output_index": 1, "content_index": 0}
    empty = {**part, "text": "", "annotations": []}
    yield event("response.content_part.added", **place, part=empty)
    yield from _text_events(event, message["id"], part)
    yield event("response.content_part.done", **place, part=part)
    yield event("response.output_item.done", output_index=1, item=message)


def response_events(
    *,
    response_id: str,
    include_results: bool,
    absolute: Callable[[str], str],
    caller_address: str | None = None,
    user_agent: str | None = None,
) -> Iterator[bytes]:
    """The events of a response being answered now, in this request (from
    ``caller_address`` with ``user_agent``)."""
    event = _Events()
    record = ResponseRecord.objects.select_related("app").get(pk=response_id)
    opened = output.response_output(record)
    yield event("response.created", response=opened)
    yield event("response.in_progress", response=opened)
    searching = output.file_search_item(record, status="in_progress", include_results=False)
    search = {"output_index": 0, "item_id": searching["id"]}
    yield event("response.output_item.added", output_index=0, item=searching)
    yield event("response.file_search_call.in_progress", **search)
    yield event("response.file_search_call.searching", **search)
    try:
        record = services.response_execute(
            response_id=response_id,
            caller_address=caller_address,
            user_agent=user_agent,
            base_url=absolute("/"),
        )
    except Exception:  # recorded failed by the service; the stream says so
        logger.exception("response %s failed", response_id)
        record = ResponseRecord.objects.select_related("app").get(pk=response_id)
    final = output.response_output(record, include_results=include_results, absolute=absolute)
    if record.status != ResponseStatus.COMPLETED:
        failed = {**searching, "status": "failed"}
        yield event("response.output_item.done", output_index=0, item=failed)
        yield event("response.failed", response={**final, "output": [failed]})
        return
    yield from _answer_events(event, record, final)
    yield event("response.completed", response=final)
