"""Columns every officers' list shares: when an answer was given and how long it
took, and an answer's or a quoted sentence's words as people read them (the
stored text, byte for byte, stays on each row's own page)."""

from __future__ import annotations

from datetime import datetime

from citations.presentation import answer_text, quote_text


def latency_label(milliseconds: float | None) -> str:
    """A latency as a list shows it; "–" when none was measured (still running, failed)."""
    return f"{milliseconds:.0f} ms" if milliseconds is not None else "–"


def elapsed_label(start: datetime | None, end: datetime | None) -> str:
    """The time from ``start`` to ``end`` as a latency, "–" until both are known."""
    if start is None or end is None:
        return latency_label(None)
    return latency_label((end - start).total_seconds() * 1000)


def answer_label(answer: str, limit: int | None = None) -> str:
    """An answer (or a quoted sentence of one) in a list: plain text, its ``[n]``
    kept, cut at ``limit`` characters."""
    shown = answer_text(answer)
    return shown if limit is None or len(shown) <= limit else shown[: limit - 1] + "…"


def quote_label(markdown: str) -> str:
    """A document's sentence (as stored) in a list: plain text."""
    return quote_text(markdown)
