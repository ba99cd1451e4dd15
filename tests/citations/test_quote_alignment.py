"""A model's quote aligned to the exact span of its chunk: what is stored is always the
chunk's own text; a quote the chunk does not hold is never found. And the reply's
time limits, read on a clock the test sets."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from citations.generators.alignment import quote_align
from citations.generators.llm import Timeouts
from citations.generators.openai_contracts import contract_read
from citations.generators.openai_request import BadBody, ReplyTimeout, stream_read

CHUNK = (
    "The \u201cretention period\u201d for camera recordings is thirty days \u2014 after which "
    "the recordings are overwritten automatically unless an incident investigation "
    "requires a longer hold.\nThe security desk operates the cameras around the clock."
)


@pytest.mark.parametrize(
    ("quote", "how", "span"),
    [
        ("camera recordings is thirty days", "exact", "camera recordings is thirty days"),
        (
            'The "retention period" for camera recordings is thirty days - after which',
            "normalised",
            "The \u201cretention period\u201d for camera recordings is thirty days "
            "\u2014 after which",
        ),
        (
            "THE SECURITY DESK OPERATES THE CAMERAS",
            "normalised",
            "The security desk operates the cameras",
        ),
        (
            "  \u2018the cameras around the clock.\u2019 ",
            "normalised",
            "the cameras around the clock.",
        ),
        (
            "camera recordings ... overwritten automatically",
            "ellipsis",
            "camera recordings is thirty days \u2014 after which the recordings are overwritten "
            "automatically",
        ),
        (
            "unless an incident investigation requirs a longer hold",
            "near",
            "unless an incident investigation requires a longer hold",
        ),
    ],
)
def test_a_quote_is_aligned_to_the_chunk_s_own_span(quote: str, how: str, span: str) -> None:
    aligned = quote_align(CHUNK, quote)
    assert aligned is not None and aligned.how == how
    assert CHUNK[aligned.start : aligned.end] == span
    assert (aligned.distance > 0) == (how == "near")


@pytest.mark.parametrize(
    "quote",
    [
        "camera recordings are kept for ninety days",  # not what the chunk says
        "thirsty days",  # short: one letter away is another word
        "camera recordings … kept forever",  # one piece of an ellipsis is not there
        "the clock. The security desk",  # pieces out of order
        "",
        "   ",
    ],
)
def test_a_quote_the_chunk_does_not_hold_is_not_found(quote: str) -> None:
    assert quote_align(CHUNK, quote) is None


def test_a_near_match_has_a_bound() -> None:
    garbled = "unless an incidant investigatoin requirse a lnoger hodl"  # 5 slips in 55
    assert quote_align(CHUNK, garbled) is None


def test_flat_replies_wrapped_in_prose_or_fences_are_read() -> None:
    for content in (
        'Here you go: {"answer": []} hope it helps',
        '```json\n{"answer": [{"snippet": 1, "quote": "q", "text": "t"}]}\n```',
    ):
        data, problems = contract_read(content, "flat")
        assert data is not None and problems == ()
    assert contract_read('{"answer": "none"}', "flat") == (None, ("invalid_answer",))
    assert contract_read("x" * 200_001, "flat") == (None, ("reply_too_long",))


class Clock:
    """Time that moves only when a line of the stream arrives."""

    def __init__(self, steps: list[float]) -> None:
        self.steps, self.now = iter(steps), 0.0

    def __call__(self) -> float:
        self.now = next(self.steps, self.now)
        return self.now


def _chunk(text: str) -> str:
    chunk = {"id": "c1", "model": "m", "choices": [{"delta": {"content": text}}]}
    return f"data: {json.dumps(chunk)}"


LIMITS = Timeouts(connect=1, first_token=10, total=30)


def _lines(*lines: str) -> Iterator[str]:
    yield from lines


def test_pings_before_the_first_token_count_against_the_first_token_limit() -> None:
    lines = _lines(": ping", "", ": ping", _chunk("{}"), "data: [DONE]")
    with pytest.raises(ReplyTimeout) as late:
        stream_read(lines, timeouts=LIMITS, started=0.0, clock=Clock([5.0, 5.0, 11.0, 12.0]))
    assert late.value.which == "first_token" and late.value.seconds == 10


def test_a_reply_that_started_in_time_may_take_until_the_total_limit() -> None:
    lines = _lines(_chunk('{"answer"'), _chunk(": []}"), "data: [DONE]")
    done = stream_read(lines, timeouts=LIMITS, started=0.0, clock=Clock([9.0, 29.0, 29.5]))
    assert done.content == '{"answer": []}' and done.first_token_ms == 9000.0
    slow = _lines(_chunk("{"), _chunk("}"), "data: [DONE]")
    with pytest.raises(ReplyTimeout) as late:
        stream_read(slow, timeouts=LIMITS, started=0.0, clock=Clock([9.0, 31.0]))
    assert late.value.which == "total"


def test_an_error_inside_the_stream_is_a_bad_body() -> None:
    lines = _lines(_chunk("{"), 'data: {"error": {"message": "model crashed"}}')
    with pytest.raises(BadBody, match="model crashed"):
        stream_read(lines, timeouts=LIMITS, started=0.0, clock=Clock([1.0, 2.0]))
