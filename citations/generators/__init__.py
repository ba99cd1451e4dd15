"""Answer generators: given a question and retrieved chunks, choose claims.

A generator returns :class:`Claim` objects (a verbatim span of a retrieved
chunk, in answer order); :mod:`citations.composition` turns them into the
answer text with ``[n]`` markers. An LLM generator plugs in by returning
claims the same way (e.g. from Anthropic Citations' ``cited_text`` spans).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from citations.models import App


@dataclass(frozen=True)
class Passage:
    """A retrieved chunk as the generator sees it (``index`` = its place in the hit list)."""

    index: int
    text: str
    score_norm: float


@dataclass(frozen=True)
class Claim:
    """``passages[passage].text[source_start:source_end]`` supports one answer sentence."""

    passage: int
    source_start: int
    source_end: int
    reply: str
    relevance: float


class Generator(Protocol):
    name: str

    def generate(
        self, *, question: str, question_vector: Sequence[float], passages: Sequence[Passage]
    ) -> list[Claim]: ...


def generator_for(app: App) -> Generator:
    """The app's generator, configured with the app's answer settings."""
    from citations.generators.extractive import ExtractiveGenerator

    if app.generator == "extractive":
        return ExtractiveGenerator(
            max_sentences=app.max_answer_sentences, threshold=app.answer_threshold
        )
    raise ValueError(f"unknown generator {app.generator!r}")
