"""Answer generators: given a question and retrieved chunks, choose claims.

A generator returns :class:`Claim` objects (a verbatim span of a retrieved
chunk, in answer order); :mod:`citations.composition` turns them into the
answer text with ``[n]`` markers. The LLM generators (``openai``,
``anthropic``) return a :class:`Generation`: the claims that passed
verification, every check made (supported or not) and the model calls as
evidence; see :mod:`citations.generators.verify`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from citations.generators.extractive.generator import ExtractiveGenerator
    from citations.models import App


@dataclass(frozen=True)
class Passage:
    """A retrieved chunk as the generator sees it (``index`` = its place in the hit list);
    ``title`` names its document and section, ``payload`` is the citation payload issued
    for it (what a model must cite); ``context`` is its chunk's stored context, the
    record it belongs to (``documents.chunk_context``)."""

    index: int
    text: str
    score_norm: float
    title: str = ""
    payload: Mapping[str, Any] | None = None
    context: str = ""


@dataclass(frozen=True)
class Claim:
    """``passages[passage].text[source_start:source_end]`` supports one answer sentence.

    ``sentence`` groups the claims of one model-written sentence that cites several
    passages (the sentence is written once, followed by its markers)."""

    passage: int
    source_start: int
    source_end: int
    reply: str
    relevance: float
    sentence: int | None = None


@dataclass(frozen=True)
class ClaimCheck:
    """The verification of one citation of a model's reply sentence."""

    sentence: int
    reply: str
    reason: str  # "supported" or why not
    passage: int | None = None
    snippet_id: str = ""
    quote: str = ""
    citation_type: str = ""
    source_start: int | None = None
    source_end: int | None = None
    support: float | None = None
    document_index: int | None = None
    document_title: str = ""
    cited_block_index: int | None = None
    claimed: Mapping[str, Any] = field(default_factory=dict)
    # how the quote was found in the chunk (citations.generators.alignment), and the
    # edits between them when it was found near, not exactly
    alignment: str = ""
    edit_distance: int | None = None

    @property
    def supported(self) -> bool:
        return self.reason == SUPPORTED

    def located(self) -> tuple[int, int, int]:
        """A supported check's passage, source start and end (a check is supported only
        once its quote was found in its passage)."""
        passage, start, end = self.passage, self.source_start, self.source_end
        assert passage is not None and start is not None and end is not None, self.reason
        return passage, start, end


SUPPORTED = "supported"


@dataclass(frozen=True)
class ModelReply:
    """One request to a model and its reply as received (evidence)."""

    attempt: int
    provider: str
    model: str
    base_url: str
    prompt: Mapping[str, Any]
    raw_response: str
    response_id: str = ""
    response_model: str = ""
    finish_reason: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: float = 0.0
    transport_retries: int = 0
    contract_codes: tuple[str, ...] = ()
    # what the server was asked with and what it refused (citations.generators.wire)
    wire: Mapping[str, Any] = field(default_factory=dict)
    # why this call gave no reply to read (a timeout, a server error), else ""
    error: str = ""


@dataclass(frozen=True)
class Generation:
    """A model-written answer after verification: ``claims`` (supported, in reply order),
    ``checks`` of the reply that was kept (``calls[checked_call]``), every call made, and
    the model's own ΔS/λ or its contract error."""

    claims: list[Claim]
    checks: list[ClaimCheck]
    calls: list[ModelReply]
    checked_call: int = 0
    delta_s: float | None = None
    lambda_state: str = ""
    model_error: Mapping[str, str] | None = None


class ModelError(Exception):
    """A model could not give an answer: a stable ``code``, a message saying what to fix,
    and the HTTP status an API caller gets (502 upstream, 503 not configured, 504 slow)."""

    def __init__(self, message: str, *, code: str, status: int = 502) -> None:
        super().__init__(message)
        self.message, self.code, self.status = message, code, status
        # the calls made before the failure (evidence when the app falls back)
        self.calls: list[ModelReply] = []


class Generator(Protocol):
    name: str

    def generate(
        self, *, question: str, question_vector: Sequence[float], passages: Sequence[Passage]
    ) -> list[Claim]: ...


@runtime_checkable
class ModelGenerator(Protocol):
    name: str

    def answer(
        self, *, question: str, passages: Sequence[Passage], instructions: str | None = None
    ) -> Generation: ...


def extractive_for(app: App) -> ExtractiveGenerator:
    """The extractive generator with the app's answer settings (its own generator, or
    the one that answers when the app's model cannot)."""
    from citations.generators.extractive.generator import ExtractiveGenerator

    return ExtractiveGenerator(
        max_sentences=app.max_answer_sentences, threshold=app.answer_threshold
    )


def generator_for(app: App) -> Generator | ModelGenerator:
    """The app's generator, configured with the app's answer settings."""
    if app.generator == "extractive":
        return extractive_for(app)
    if app.generator == "openai":
        from citations.generators.openai_chat import OpenAIChatGenerator

        return OpenAIChatGenerator(app)
    if app.generator == "anthropic":
        from citations.generators.anthropic_messages import AnthropicGenerator

        return AnthropicGenerator(app)
    raise ValueError(f"unknown generator {app.generator!r}")
