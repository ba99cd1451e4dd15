"""Answering in steps: plan the sub-questions, answer each with its own retrieval
(searching with the answers of the steps it uses), then join the steps' verified
claims into the final answer, numbered over every step in order of first use.

Every claim of the final answer is a claim of a step, so it was checked against
that step's retrieval set, which is part of this answer's retrieval set: the final
answer needs no unverified synthesis text (DESIGN invariants 5, 6, 9 hold for it
and for each step's own answer). A chunk cited by two steps is one ``[n]``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from django.conf import settings
from django.db import models

from citations.composition import NOT_FOUND, ComposedClaim, Composition, compose_sentences
from citations.generators import (
    Claim,
    Generation,
    Generator,
    ModelError,
    ModelGenerator,
    ModelReply,
    generator_for,
)
from citations.markers import MARKER
from citations.model_evidence import claim_checks_create, model_calls_create
from citations.models import (
    App,
    ClaimCitation,
    QueryExecution,
    QuotedSource,
    ReasoningStep,
    RetrievalHit,
    StepClaim,
    StepSourceAttribution,
)
from citations.reasoning.attribution import (
    PREVIEW_CONTEXTS,
    SourceAttributionService,
)
from citations.reasoning.attribution import (
    ReasoningStep as StepSchema,
)
from citations.reasoning.decompose import Plan, StepPlan, question_decompose
from citations.reasoning.proposals import plan_propose
from citations.services.searching import Retrieved, Searcher
from citations.services.writing import answer_write, falls_back

NO_HITS = "No passage was retrieved for this step, so it is not answered."
# the answers of earlier steps a step searches with, at most this long (the embedder
# reads ~256 tokens: leave room for the step's own question)
USED_ANSWERS_MAX_CHARS = 400


@dataclass
class StepResult:
    """One step as answered: its passages are indexed from 0 within the step."""

    number: int
    plan: StepPlan
    search_text: str
    retrieved: list[Retrieved]
    composition: Composition
    generation: Generation | None
    confidence: float
    execution_time: float
    searched_hits: int  # all the search returned (k_pos runs over these), kept or not
    written_by: str = ""  # the generator that wrote the step's answer
    fallback_reason: str = ""  # why the app's model did not (services.writing)

    @property
    def outcome(self) -> str:
        if not self.retrieved:
            return "no_hits"
        return "answered" if self.composition.claims else "unanswered"

    @property
    def answer(self) -> str:
        return NO_HITS if not self.retrieved else self.composition.answer


@dataclass
class SteppedAnswer:
    """The steps and the final answer over all their hits (global passage indexes)."""

    plan: Plan
    plan_call: ModelReply | None
    steps: list[StepResult]
    retrieved: list[Retrieved]
    composition: Composition
    bases: list[int]  # each step's first index in ``retrieved``
    final_of: dict[tuple[int, int], int]  # (step, its claim) -> claim of the final answer
    canonical: dict[object, int] = field(default_factory=dict)  # chunk id -> passage

    def written_by(self) -> tuple[str, str]:
        """The generator that wrote the answer (extractive only when every answered step
        fell back to it) and the first step's reason for falling back, if any did."""
        answered = [s for s in self.steps if s.retrieved]
        reasons = [s.fallback_reason for s in answered if s.fallback_reason]
        names = {s.written_by for s in answered} or {s.written_by for s in self.steps}
        name = "extractive" if names == {"extractive"} else next(iter(names - {"extractive"}), "")
        return name, reasons[0] if reasons else ""

    def record(
        self,
        execution: QueryExecution,
        hits: list[RetrievalHit],
        sources: dict[int, QuotedSource],
        claims: list[ClaimCitation],
    ) -> list[models.Model]:
        """The model calls and checks, the steps, their attributions and claims."""
        model_rows, attempts = self._model_evidence(execution, hits, claims)
        steps = ReasoningStep.objects.bulk_create(
            [self._step_row(execution, s, attempts.get(s.number, [])) for s in self.steps]
        )
        attributions: list[StepSourceAttribution] = []
        step_claims: list[StepClaim] = []
        for result, row in zip(self.steps, steps, strict=True):
            made = self._attributions(execution, result, row, hits, sources)
            attributions += made.values()
            step_claims += self._step_claims(execution, result, row, made, claims)
        StepSourceAttribution.objects.bulk_create(attributions)
        StepClaim.objects.bulk_create(step_claims)
        return [*model_rows, *steps, *attributions, *step_claims]

    def global_passage(self, step: StepResult, local: int) -> int:
        own = self.bases[step.number - 1] + local
        return self.canonical.get(self.retrieved[own].chunk.pk, own)

    def _model_evidence(
        self, execution: QueryExecution, hits: list[RetrievalHit], claims: list[ClaimCitation]
    ) -> tuple[list[models.Model], dict[int, list[int]]]:
        calls = [self.plan_call] if self.plan_call else []
        attempts: dict[int, list[int]] = {}
        checked: list[tuple[StepResult, Generation, int]] = []
        for step in self.steps:
            if step.generation is None or not step.generation.calls:
                continue
            first = len(calls)
            calls += step.generation.calls
            attempts[step.number] = list(range(first + 1, len(calls) + 1))
            checked.append((step, step.generation, first + step.generation.checked_call))
        if not calls:
            return [], attempts
        numbered = Generation([], [], [replace(c, attempt=i) for i, c in enumerate(calls, 1)])
        made = model_calls_create(execution, numbered)
        rows: list[models.Model] = list(made)
        for step, step_generation, call_index in checked:
            generation = self._checks_remapped(step, step_generation)
            rows += claim_checks_create(
                execution,
                generation,
                made[call_index],
                hits,
                composition=self.composition,
                claim_rows=claims,
            )
        return rows, attempts

    def _checks_remapped(self, step: StepResult, generation: Generation) -> Generation:
        """The step's checks with passages and sentences as the final answer has them."""
        offset = _sentence_offset(self.steps, step)
        checks = [
            replace(
                c,
                passage=None if c.passage is None else self.global_passage(step, c.passage),
                sentence=c.sentence + offset,
            )
            for c in generation.checks
        ]
        return replace(generation, checks=checks)

    def _step_row(
        self, execution: QueryExecution, step: StepResult, attempts: list[int]
    ) -> ReasoningStep:
        base = sum(s.searched_hits for s in self.steps[: step.number - 1])
        return ReasoningStep(
            query=execution,
            step_number=step.number,
            question=step.plan.question,
            intermediate_answer=step.answer,
            confidence_score=step.confidence,
            reasoning_trace=_trace(self, step),
            execution_time=round(step.execution_time, 6),
            outcome=step.outcome,
            proposed_by=self.plan.proposed_by,
            search_text=step.search_text,
            uses_steps=list(step.plan.uses),
            hits_from=base + 1 if step.searched_hits else None,
            hits_to=base + step.searched_hits if step.searched_hits else None,
            model_call_attempts=attempts,
            context_used=[str(r.chunk.pk) for r in step.retrieved[:PREVIEW_CONTEXTS]],
        )

    def _attributions(
        self,
        execution: QueryExecution,
        step: StepResult,
        row: ReasoningStep,
        hits: list[RetrievalHit],
        sources: dict[int, QuotedSource],
    ) -> dict[int, StepSourceAttribution]:
        """One per passage the step cites, made by the document's service."""
        service = SourceAttributionService()
        cited = sorted(step.composition.quoted.items(), key=lambda item: int(item[1]))
        results = [_search_result(step, local) for local, _ in cited]
        schema = StepSchema(step.number, step.plan.question, step.answer, step.confidence)
        enhanced = service.enhance_reasoning_step_with_sources(schema, results)
        made: dict[int, StepSourceAttribution] = {}
        pairs = zip(cited, enhanced.source_attributions, strict=True)
        for (local, quoted_as), attribution in pairs:
            own = self.bases[step.number - 1] + local
            r = self.retrieved[own]
            # made from _search_result, which gives both
            assert attribution.chunk_index is not None and attribution.retrieval_rank is not None
            made[local] = StepSourceAttribution(
                query=execution,
                step=row,
                quoted_as=quoted_as,
                final_source=sources.get(self.global_passage(step, local)),
                hit=hits[own],
                chunk=r.chunk,
                file=r.chunk.file,
                file_revision=r.chunk.file.revision,
                chunk_hash=r.chunk.content_hash,
                document_id=attribution.document_id,
                document_title=(attribution.document_title or "")[:255],
                relevance_score=attribution.relevance_score,
                score_norm=r.hit.score_norm,
                excerpt=attribution.excerpt or "",
                chunk_index=attribution.chunk_index,
                retrieval_rank=attribution.retrieval_rank,
            )
        return made

    def _step_claims(
        self,
        execution: QueryExecution,
        step: StepResult,
        row: ReasoningStep,
        made: dict[int, StepSourceAttribution],
        claims: list[ClaimCitation],
    ) -> list[StepClaim]:
        rows = []
        for index, composed in enumerate(step.composition.claims):
            claim = composed.claim
            text = step.retrieved[claim.passage].chunk.chunk_text
            final = self.final_of.get((step.number, index))
            rows.append(
                StepClaim(
                    query=execution,
                    step=row,
                    attribution=made[claim.passage],
                    claim=claims[final] if final is not None else None,
                    segment=index + 1,
                    reply_sentence=composed.reply,
                    reply_start=composed.reply_start,
                    reply_end=composed.reply_end,
                    source_sentence=text[claim.source_start : claim.source_end],
                    source_start=claim.source_start,
                    source_end=claim.source_end,
                    relevance=claim.relevance,
                )
            )
        return rows


def _search_result(step: StepResult, local: int) -> dict:
    """A cited passage as the document's structured search result."""
    r = step.retrieved[local]
    spans = [c.claim for c in step.composition.claims if c.claim.passage == local]
    excerpt = " … ".join(r.chunk.chunk_text[c.source_start : c.source_end] for c in spans)
    return {
        "document_id": str(r.chunk.file.document_id),
        "title": r.chunk.file.name,
        "score": min(1.0, max(0.0, r.hit.score_norm)),
        "content": excerpt,
        "chunk_index": r.chunk.position,
        "retrieval_rank": r.k_pos,
    }


def _sentence_offset(steps: Sequence[StepResult], step: StepResult) -> int:
    """Model sentences are numbered per reply; in the final answer, per answer."""
    offset = 0
    for earlier in steps[: step.number - 1]:
        sentences = [c.sentence for c in earlier.generation.checks] if earlier.generation else []
        offset += max(sentences, default=-1) + 1
    return offset


# the best score an extractive claim can reach: its relevance is a probability
EXTRACTIVE_BEST = 1.0


def _confidence(composition: Composition, *, best: float) -> float:
    """How well the step's claims answer it, 0..1: their mean relevance as a share of
    the best possible (the extractive score, or a model claim's support score, whose
    best is 1); 0 when the step cites nothing."""
    values = [min(1.0, max(0.0, c.claim.relevance / best)) for c in composition.claims]
    return round(sum(values) / len(values), 6) if values else 0.0


def _plain(answer: str) -> str:
    return " ".join(MARKER.sub("", answer).split())


def _search_text(plan: StepPlan, done: list[StepResult], context: str) -> str:
    used = " ".join(_plain(done[u - 1].answer) for u in plan.uses if done[u - 1].retrieved)
    parts = [context, used[-USED_ANSWERS_MAX_CHARS:], plan.question]
    return "\n".join(p for p in parts if p).strip()


def _run_step(
    searcher: Searcher,
    generator: Generator | ModelGenerator,
    number: int,
    plan: StepPlan,
    done: list[StepResult],
    *,
    context: str,
    instructions: str | None,
) -> StepResult:
    started = time.perf_counter()
    search_text = _search_text(plan, done, context)
    retrieved, vector = searcher.search(search_text)
    passages = searcher.passages(retrieved)
    generation, written_by, fallback_reason = None, generator.name, ""
    if not retrieved:
        composition = Composition(NOT_FOUND, [], {})
    else:

        def answer_vector() -> Sequence[float]:
            steered = vector if search_text == plan.question else None
            return steered or searcher.answer_vector(plan.question, vector)

        written = answer_write(
            app=searcher.app,
            question=plan.question,
            passages=passages,
            question_vector=answer_vector,
            instructions=instructions,
        )
        composition, generation = written.composition, written.generation
        written_by, fallback_reason = written.generator, written.fallback_reason
    modelled = generation is not None and not fallback_reason
    return StepResult(
        number=number,
        plan=plan,
        search_text=search_text,
        retrieved=retrieved,
        composition=composition,
        generation=generation,
        confidence=_confidence(composition, best=1.0 if modelled else EXTRACTIVE_BEST),
        execution_time=time.perf_counter() - started,
        searched_hits=max((r.k_pos for r in retrieved), default=0),
        written_by=written_by,
        fallback_reason=fallback_reason,
    )


def _plan(
    generator: Generator | ModelGenerator, question: str, app: App
) -> tuple[Plan, ModelReply | None]:
    max_steps = settings.PROVENANCE_REASONING_MAX_STEPS
    if isinstance(generator, ModelGenerator):
        try:
            return plan_propose(generator, question, max_steps=max_steps)
        except ModelError as exc:  # planned by the question's structure instead
            if not falls_back(app, exc):
                raise
            plan = question_decompose(question, max_steps=max_steps)
            note = f"the model could not plan the steps ({exc.code}): planned by the question"
            return replace(plan, notes=[*plan.notes, note]), None
    return question_decompose(question, max_steps=max_steps), None


def stepped_answer(
    *, searcher: Searcher, question: str, context: str, instructions: str | None
) -> SteppedAnswer:
    """Plan, answer each step, and join them into the final answer."""
    generator = generator_for(searcher.app)
    plan, plan_call = _plan(generator, question, searcher.app)
    done: list[StepResult] = []
    for number, step in enumerate(plan.steps, start=1):
        done.append(
            _run_step(
                searcher, generator, number, step, done, context=context, instructions=instructions
            )
        )
    return _joined(plan, plan_call, done)


def _offset(results: list[StepResult], step: StepResult) -> tuple[int, int]:
    """How far a step's k_pos and k_final move so the answer's hits never collide."""
    earlier = results[: step.number - 1]
    return sum(s.searched_hits for s in earlier), sum(len(s.retrieved) for s in earlier)


def _joined(plan: Plan, plan_call: ModelReply | None, results: list[StepResult]) -> SteppedAnswer:
    retrieved: list[Retrieved] = []
    bases: list[int] = []
    for step in results:
        k_pos, k_final = _offset(results, step)
        bases.append(len(retrieved))
        retrieved += [
            replace(r, k_pos=r.k_pos + k_pos, k_final=r.k_final + k_final) for r in step.retrieved
        ]
    answer = SteppedAnswer(plan, plan_call, results, retrieved, Composition("", [], {}), bases, {})
    claims: list[Claim] = []
    spans: dict[tuple[object, int, int], int] = {}
    for step in results:
        offset = _sentence_offset(results, step)
        for index, composed in enumerate(step.composition.claims):
            claim = _final_claim(answer, step, composed, offset)
            key = (retrieved[claim.passage].chunk.pk, claim.source_start, claim.source_end)
            if key not in spans:  # the same quote again: one claim, cited once
                spans[key] = len(claims)
                claims.append(claim)
            answer.final_of[(step.number, index)] = spans[key]
    answer.composition = compose_sentences(claims)
    return answer


def _final_claim(
    answer: SteppedAnswer, step: StepResult, composed: ComposedClaim, offset: int
) -> Claim:
    own = answer.bases[step.number - 1] + composed.claim.passage
    passage = answer.canonical.setdefault(answer.retrieved[own].chunk.pk, own)
    sentence = composed.claim.sentence
    return replace(
        composed.claim,
        passage=passage,
        sentence=None if sentence is None else sentence + offset,
    )


def _trace(answer: SteppedAnswer, step: StepResult) -> str:
    """What the step did, in words an officer reads (the plan's notes on step 1)."""
    lines = []
    if step.number == 1:
        by = {"question": "the question's structure", "model": "the model"}
        proposer = by.get(answer.plan.proposed_by, "fallback")
        lines.append(
            f"{len(answer.steps)} step(s), proposed by {proposer}"
            + (f"; {'; '.join(answer.plan.notes)}" if answer.plan.notes else "")
            + "."
        )
    used = ", ".join(str(u) for u in step.plan.uses)
    lines.append(
        f"Step {step.number}: searched for {step.plan.question!r}"
        + (f" with the answer of step(s) {used}" if used else "")
        + f"; {len(step.retrieved)} passage(s) retrieved."
    )
    if step.outcome == "no_hits":
        lines.append(
            "Nothing was retrieved: the step is not answered and the final answer cites "
            "nothing for it."
        )
    elif step.outcome == "unanswered":
        lines.append("No retrieved passage answers it: the final answer cites nothing for it.")
    else:
        cited = sorted(step.composition.quoted.items(), key=lambda item: int(item[1]))
        named = "; ".join(
            f"[{n}] {step.retrieved[p].chunk.file.name} (rank {step.retrieved[p].k_pos}, "
            f"score {step.retrieved[p].hit.score_norm:.3f})"
            for p, n in cited
        )
        lines.append(f"Cited {named}; confidence {step.confidence:.2f}.")
    return " ".join(lines)
