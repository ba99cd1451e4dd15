"""Reading one answer's evidence against its gold item, and the run's figures.

An item is judged from what the answer path recorded (hits, quoted sources, the
question's trace row, the validator); the figures are computed from the items only,
so a report can always be recomputed from the stored rows.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from uuid import UUID

import numpy as np

from citations.models import RagTrace
from documents.models import Location
from evaluation.goldsets import document_name_matches
from evaluation.models import EvaluationItem, Verdict
from evaluation.recipe import measures_lambda
from evaluation.squad import SECTION_SEPARATOR

DELTA_S_LIMIT = 0.45
RECALL_KS = (1, 3, 5, 10)
# the retrieval-traceability document's acceptance targets: figure -> (op, value)
TARGETS = {
    "citation_match_rate": (">=", 0.95),
    "coverage": (">=", 0.70),
    "delta_s_over_045": ("<=", 0.0),  # ΔS(question, retrieved) ≤ 0.45 for every question
    # λ convergent across 3 paraphrases and 2 seeds, for every question asked so
    "lambda_convergent": (">=", 1.0),
}
CONVERGENT = "convergent"
_SPACE = re.compile(r"\s+")


def normalized(text: str) -> str:
    """Case and whitespace do not decide whether an answer text is present."""
    return _SPACE.sub(" ", text).strip().casefold()


def text_holds(text: str, answers: Sequence[str]) -> bool:
    haystack = normalized(text)
    return any(normalized(a) in haystack for a in answers)


@dataclass(frozen=True)
class Snippet:
    """A retrieved or cited chunk as the evaluation compares it with the expectation."""

    snippet_id: str
    document: str
    sections: tuple[str, ...]
    text: str


def place_expected(expected: dict) -> bool:
    return any(k in expected for k in ("document", "section", "snippet_id"))


def place_matches(expected: dict, snippet: Snippet) -> bool:
    """In the expected snippet, or in the expected section (or one under it) of the
    expected document; a chunk touching several sections matches any of them."""
    if "snippet_id" in expected and snippet.snippet_id != expected["snippet_id"]:
        return False
    if "document" in expected and not document_name_matches(snippet.document, expected["document"]):
        return False
    wanted = expected.get("section")
    if wanted is None:
        return True
    return any(s == wanted or s.startswith(wanted + SECTION_SEPARATOR) for s in snippet.sections)


def correct(expected: dict, snippet: Snippet) -> bool:
    """The source the question should be answered from: its place, or (with no place
    given) a chunk holding the expected answer text."""
    if place_expected(expected):
        return place_matches(expected, snippet)
    return "answer" in expected and text_holds(snippet.text, expected["answer"])


def chunk_sections(chunk_ids: Sequence[UUID | str]) -> dict[str, set[str]]:
    """Every heading path each chunk touches (one location per section it spans)."""
    sections: dict[str, set[str]] = {}
    for chunk_id, hierarchy in Location.objects.filter(chunk_id__in=chunk_ids).values_list(
        "chunk_id", "hierarchy"
    ):
        sections.setdefault(str(chunk_id), set()).add(SECTION_SEPARATOR.join(hierarchy))
    return sections


@dataclass
class Judgement:
    """What the evaluation reads from one answer (the item row's fields)."""

    cited: list[dict] = field(default_factory=list)
    hit_ids: list[str] = field(default_factory=list)
    first_correct_rank: int | None = None
    matched_citations: int = 0
    source_coverage: bool | None = None
    answer_coverage: bool | None = None
    verdict: str = Verdict.PASS


def judge(
    *,
    expected: dict,
    answerable: bool,
    unmatched: bool,
    answer: str,
    hits: Sequence[Snippet],
    cited: Sequence[tuple[str, Snippet]],
) -> Judgement:
    """``hits`` in k order; ``cited`` as (quoted_as, snippet) in [n] order."""
    result = Judgement(hit_ids=[h.snippet_id for h in hits])
    for quoted_as, snippet in cited:
        matches = None if not place_expected(expected) else place_matches(expected, snippet)
        matches = False if unmatched else matches
        result.matched_citations += bool(matches)
        result.cited.append(
            {
                "quoted_as": quoted_as,
                "snippet_id": snippet.snippet_id,
                "document": snippet.document,
                "section": snippet.sections[0] if snippet.sections else "",
                "matches": matches,
            }
        )
    if not unmatched:
        result.first_correct_rank = next(
            (rank for rank, h in enumerate(hits, start=1) if correct(expected, h)), None
        )
    if "answer" in expected:
        answers = expected["answer"]
        result.source_coverage = any(text_holds(s.text, answers) for _, s in cited)
        result.answer_coverage = text_holds(answer, answers)
    result.verdict = _verdict(expected, answerable, unmatched, result)
    return result


def _verdict(expected: dict, answerable: bool, unmatched: bool, result: Judgement) -> str:
    if not answerable:
        return Verdict.ANSWERED_UNANSWERABLE if result.cited else Verdict.ABSTAINED
    if unmatched:
        return Verdict.UNMATCHED
    if not result.cited:
        return Verdict.FALSE_ABSTENTION
    if place_expected(expected) and not result.matched_citations:
        return Verdict.WRONG_SOURCE
    if result.source_coverage is False:
        return Verdict.MISSED_ANSWER
    return Verdict.PASS


VERDICT_ORDER = {value: index for index, value in enumerate(Verdict.values)}


def _rate(numerator: int, denominator: int) -> float | None:
    return round(numerator / denominator, 4) if denominator else None


def _percentile(values: Sequence[float], q: float) -> float | None:
    """numpy's default (linear) percentile."""
    return round(float(np.percentile(values, q)), 2) if values else None


def figures_compute(items: Sequence[EvaluationItem], *, seeds: int) -> dict:
    """The report's figures from the item rows (see docs/evaluation.md for each)."""
    done = [i for i in items if i.verdict != Verdict.FAILED]
    answerable = [i for i in done if i.answerable]
    unanswerable = [i for i in done if not i.answerable]
    placed = [i for i in answerable if place_expected(i.expected)]
    with_answer = [i for i in answerable if "answer" in i.expected]
    ranked = [i for i in answerable if place_expected(i.expected) or "answer" in i.expected]
    deltas = [i.delta_s for i in answerable if i.delta_s is not None]
    latencies = [i.latency_ms for i in done if i.latency_ms is not None]
    cited = sum(len(i.cited) for i in placed)
    figures = {
        "questions": len(items),
        "failed": len(items) - len(done),
        "unmatched": sum(i.verdict == Verdict.UNMATCHED for i in items),
        "citation_match_rate": _rate(sum(i.matched_citations for i in placed), cited),
        "items_citing_expected_place": _rate(
            sum(i.matched_citations > 0 for i in placed), len(placed)
        ),
        "coverage": _rate(sum(bool(i.source_coverage) for i in with_answer), len(with_answer)),
        "answer_coverage": _rate(
            sum(bool(i.answer_coverage) for i in with_answer), len(with_answer)
        ),
        "delta_s_p50": _percentile(deltas, 50),
        "delta_s_p95": _percentile(deltas, 95),
        "delta_s_over_045": _rate(sum(d > DELTA_S_LIMIT for d in deltas), len(deltas)),
        "abstention_rate": _rate(sum(not i.cited for i in unanswerable), len(unanswerable)),
        "false_abstention_rate": _rate(sum(not i.cited for i in answerable), len(answerable)),
        "validator": dict(sorted(Counter(i.validator_status for i in done).items())),
        "latency_p50_ms": _percentile(latencies, 50),
        "latency_p95_ms": _percentile(latencies, 95),
        "mrr": _rate_float(
            sum(1 / i.first_correct_rank for i in ranked if i.first_correct_rank), len(ranked)
        ),
        "recall_at": {
            str(k): _rate(
                sum(bool(i.first_correct_rank and i.first_correct_rank <= k) for i in ranked),
                len(ranked),
            )
            for k in RECALL_KS
        },
        "verdicts": dict(sorted(Counter(i.verdict for i in items).items())),
        "seed_agreement": _seed_agreement(items) if seeds > 1 else None,
        **_lambda(answerable_asked(items)),
        **_writers(done, with_answer),
    }
    figures["targets"] = targets_compare(figures)
    return figures


def _written(item: EvaluationItem) -> tuple[str, str]:
    """The generator that wrote an item's answer and why the app's model did not."""
    query = item.query
    return (query.generator, query.fallback_reason) if query is not None else ("", "")


def _writers(done: Sequence[EvaluationItem], with_answer: Sequence[EvaluationItem]) -> dict:
    """Who wrote the answers, and the answer coverage of a model's own answers against
    its fallback's (an app whose model could not give a verified answer fell back)."""
    by_model = [i for i in with_answer if _written(i)[0] not in ("", "extractive")]
    fallen = [i for i in with_answer if _written(i)[1]]
    reasons = Counter(_written(i)[1] for i in done if _written(i)[1])
    return {
        "written_by": dict(sorted(Counter(_written(i)[0] or "–" for i in done).items())),
        "fallback_reasons": dict(sorted(reasons.items())),
        "model_answer_coverage": _rate(
            sum(bool(i.answer_coverage) for i in by_model), len(by_model)
        ),
        "fallback_answer_coverage": _rate(
            sum(bool(i.answer_coverage) for i in fallen), len(fallen)
        ),
    }


def answerable_asked(items: Sequence[EvaluationItem]) -> list[EvaluationItem]:
    """The answerable items, failed ones too: an answer that failed did not converge."""
    return [i for i in items if i.answerable and i.verdict != Verdict.UNMATCHED]


def _lambda(items: Sequence[EvaluationItem]) -> dict:
    """``lambda_convergent``: of the answerable questions asked with the recipe's
    paraphrases and seeds (``lambda_questions``), the share whose every answer (each
    phrasing, each seed) has λ convergent on every trace row (the question's and each
    claim's: ``citations.services.evidence``); None when no question was asked so."""
    groups: dict[int, list[EvaluationItem]] = {}
    for item in items:
        groups.setdefault(item.line, []).append(item)
    measured = [
        group
        for group in groups.values()
        if measures_lambda(
            paraphrases=len({i.variant for i in group}) - 1, seeds=len({i.seed for i in group})
        )
    ]
    states = _lambda_states([i for group in measured for i in group])
    convergent = sum(all(states.get(i.pk) == CONVERGENT for i in group) for group in measured)
    return {
        "lambda_convergent": _rate(convergent, len(measured)),
        "lambda_questions": len(measured),
    }


def _lambda_states(items: Sequence[EvaluationItem]) -> dict[int, str]:
    """Each answered item's λ: convergent when every trace row of its answer is, else
    the first other state (a failed answer has none)."""
    by_query = {i.query_id: i.pk for i in items if i.query_id is not None}
    states: dict[int, str] = {}
    rows = RagTrace.objects.filter(query_id__in=list(by_query)).order_by("query_id", "seg")
    for query_id, state in rows.values_list("query_id", "lambda_state"):
        item = by_query[query_id]
        if states.get(item, CONVERGENT) == CONVERGENT:
            states[item] = state
    return states


def _rate_float(total: float, denominator: int) -> float | None:
    return round(total / denominator, 4) if denominator else None


def _seed_agreement(items: Sequence[EvaluationItem]) -> float | None:
    """Share of questions whose every seed retrieved the same hits in the same order and
    gave the same answer."""
    groups: dict[tuple[int, int], set[str]] = {}
    for item in items:
        key = (item.line, item.variant)
        groups.setdefault(key, set()).add(repr((item.hit_ids, item.answer, item.verdict)))
    return _rate(sum(len(g) == 1 for g in groups.values()), len(groups))


def targets_compare(figures: dict) -> dict:
    """Each target with the run's value and whether it is met (None: nothing to measure)."""
    compared = {}
    for name, (op, target) in TARGETS.items():
        value = figures.get(name)
        met = None if value is None else (value >= target if op == ">=" else value <= target)
        compared[name] = {"op": op, "target": target, "value": value, "met": met}
    return compared


def worst_first(items: Sequence[EvaluationItem]) -> list[EvaluationItem]:
    """Failed and wrong items first, then the ones retrieved with the highest ΔS."""
    return sorted(
        items,
        key=lambda i: (VERDICT_ORDER.get(i.verdict, 0), -(i.delta_s or 0.0), i.position),
    )
