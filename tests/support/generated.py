"""Generated documents of a known size, for the ingestion load and limit tests."""

from __future__ import annotations

import random
import time
from collections.abc import Callable

WORDS = (
    "policy",
    "leave",
    "record",
    "audit",
    "employee",
    "manager",
    "approve",
    "request",
    "report",
    "quarter",
    "budget",
    "travel",
    "expense",
    "safety",
    "training",
    "contract",
    "supplier",
    "invoice",
    "payment",
    "review",
    "retention",
    "archive",
    "consent",
    "notice",
    "breach",
    "incident",
    "access",
    "control",
    "vendor",
    "schedule",
    "deadline",
)


def notes_markdown(sections: int, *, seed: int, words: int = 40) -> bytes:
    """``sections`` short sections (``## Note n`` and one sentence of ``words`` words,
    about 60 tokens): each is one chunk, so the file makes that many chunks and
    embeds quickly per chunk, while needing many batches."""
    rng = random.Random(seed)
    parts = ["# Generated notes\n"]
    for n in range(1, sections + 1):
        sentence = " ".join(rng.choice(WORDS) for _ in range(words))
        parts.append(f"## Note {n}\n\nNote {n} of set {seed} says: {sentence}.\n")
    return "\n".join(parts).encode()


def runaway_line(size: int, *, seed: int = 0) -> bytes:
    """One Markdown line of ``size`` bytes of words and no break: what an export gone
    wrong looks like (no heading, no paragraph to cut at)."""
    rng = random.Random(seed)
    out, length = [], 0
    while length < size:
        word = rng.choice(WORDS)
        out.append(word)
        length += len(word) + 1
    return " ".join(out).encode()[:size]


def wait_until(
    predicate: Callable[[], object], *, timeout: float, interval: float = 0.1, what: str = ""
) -> float:
    """Poll ``predicate`` until true; returns the seconds it took."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if predicate():
            return time.monotonic() - started
        time.sleep(interval)
    raise AssertionError(f"not within {timeout} s: {what}")
