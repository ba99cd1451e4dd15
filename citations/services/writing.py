"""Writing an answer from retrieved passages: by the app's generator, and when its
model cannot give a verified answer, by the extractive generator instead.

A model that errs, times out, or replies with nothing that verifies leaves the user
without an answer; most apps would rather have the extractive one, said to be that
(``generator: "extractive"``, ``fallback_reason``) with the model's calls and their
failure kept as evidence. An app set to ``model_fallback: fail`` fails instead (502
or 504). A model that says the passages do not answer is an answer, not a failure;
an app without a key, with a wrong key or an unknown model is misconfigured, which a
fallback would hide.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from citations.composition import Composition, compose
from citations.generators import (
    Generation,
    ModelError,
    ModelGenerator,
    Passage,
    extractive_for,
    generator_for,
)
from citations.model_evidence import generation_compose
from citations.models import App, ModelFallback

# the reason recorded when a reply was read but nothing of it verified
MODEL_CONTRACT = "model_contract"
# errors of the app's configuration (no key, a wrong key, an unknown model), not the
# model's failure: an answer that hid them would keep them unfixed
NOT_FALLEN_BACK = frozenset(
    {"model_not_configured", "model_auth_failed", "model_forbidden", "model_not_found"}
)


# what a fallback reason means, for pages and the admin
FALLBACK_MEANINGS = {
    MODEL_CONTRACT: "nothing of its reply could be verified against the passages",
    "model_timeout": "it did not answer within its time limit",
    "model_unavailable": "its server failed",
    "model_unreachable": "its server could not be reached",
    "model_rate_limited": "its server was rate-limiting this key",
    "model_invalid_reply": "it did not reply in the citation contract, twice",
    "model_empty_reply": "it gave an empty reply, twice",
    "model_bad_response": "its server's reply was not a chat completion",
    "model_refused": "it refused to answer",
}


def fallback_meaning(reason: str) -> str:
    """A fallback reason in words."""
    return FALLBACK_MEANINGS.get(reason, f"it failed ({reason})")


def falls_back(app: App, error: ModelError) -> bool:
    """Whether ``app`` answers extractively after its model failed with ``error``."""
    return app.model_fallback != ModelFallback.FAIL and error.code not in NOT_FALLEN_BACK


@dataclass(frozen=True)
class Written:
    """An answer's composition, the model's generation (its calls and checks, when a
    model was asked), the generator that wrote it, and why the model did not."""

    composition: Composition
    generation: Generation | None
    generator: str
    fallback_reason: str = ""
    # the extractive answer's: each scored passage's probability (its rerank score),
    # and the answer's probability (what its confidence reads)
    rerank: Mapping[int, float] = field(default_factory=dict)
    probability: float | None = None


def _unverified(generation: Generation) -> bool:
    """A reply was read, yet nothing of it can be numbered: every sentence failed its
    checks, or the model answered with a contract error instead of sentences."""
    return not generation.claims and (bool(generation.checks) or generation.model_error is not None)


def answer_write(
    *,
    app: App,
    question: str,
    passages: Sequence[Passage],
    question_vector: Callable[[], Sequence[float]],
    instructions: str | None = None,
) -> Written:
    """The answer to ``question`` from ``passages``; ``question_vector`` gives the vector
    the extractive generator reads with (computed only when it is needed)."""
    generator = generator_for(app)
    if not isinstance(generator, ModelGenerator):
        return _extractive_written(app, question, passages, question_vector, generator.name)
    try:
        generation = generator.answer(
            question=question, passages=passages, instructions=instructions
        )
    except ModelError as exc:
        if not falls_back(app, exc):
            raise
        failed = Generation(claims=[], checks=[], calls=list(exc.calls))
        return _extractive(
            app,
            question=question,
            passages=passages,
            question_vector=question_vector,
            generation=failed,
            reason=exc.code,
        )
    if app.model_fallback != ModelFallback.FAIL and _unverified(generation):
        return _extractive(
            app,
            question=question,
            passages=passages,
            question_vector=question_vector,
            generation=generation,
            reason=MODEL_CONTRACT,
        )
    return Written(generation_compose(generation), generation, generator.name)


def _extractive(
    app: App,
    *,
    question: str,
    passages: Sequence[Passage],
    question_vector: Callable[[], Sequence[float]],
    generation: Generation,
    reason: str,
) -> Written:
    written = _extractive_written(app, question, passages, question_vector, "extractive")
    # the model's checks stay evidence, but none of them became a claim of this answer
    return replace(written, generation=generation, fallback_reason=reason)


def _extractive_written(
    app: App,
    question: str,
    passages: Sequence[Passage],
    question_vector: Callable[[], Sequence[float]],
    name: str,
) -> Written:
    extracted = extractive_for(app).extract(
        question=question, question_vector=question_vector(), passages=passages
    )
    return Written(
        compose(extracted.claims),
        None,
        name,
        rerank=extracted.rerank,
        probability=extracted.probability,
    )
