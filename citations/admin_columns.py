"""Columns every officers' list shares: when an answer was given and how long it took."""

from __future__ import annotations

from datetime import datetime


def latency_label(milliseconds: float | None) -> str:
    """A latency as a list shows it; "–" when none was measured (still running, failed)."""
    return f"{milliseconds:.0f} ms" if milliseconds is not None else "–"


def elapsed_label(start: datetime | None, end: datetime | None) -> str:
    """The time from ``start`` to ``end`` as a latency, "–" until both are known."""
    if start is None or end is None:
        return latency_label(None)
    return latency_label((end - start).total_seconds() * 1000)
