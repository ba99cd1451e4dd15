"""Splitting a question that asks several things into sub-questions by its
structure (the extractive generator's planner; a model generator's planner asks the
model, see :mod:`citations.reasoning.proposals`).

Shapes recognised, tried in this order: a list (numbered or bulleted lines),
several questions in one ("…? …?"), then per question a comparison ("difference
between A and B", "compare A and/with B", "A versus B"), "both A and B", a
comma list ("A, B and C"), two clauses ("… and what …") and two noun phrases
("the A and the B"). Anything else, and a pair of single words ("terms and
conditions", a fixed phrase more often than two questions), stays one step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

QUESTION_STRUCTURE = "question"
MODEL = "model"
FALLBACK = "fallback"

_WH = r"(?:what|who|whom|which|when|where|why|how)"
_AUX = (
    r"(?:is|are|was|were|does|do|did|can|could|should|must|will|would|has|have|had|may|"
    r"shall)"
)
_DET = r"(?:the|a|an|its|their|our|his|her|this|that|these|those|each|every|any|all)"
_LIST_LINE = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)])\s+(.+?)\s*$")
_QUESTION_PIECE = re.compile(r"[^?]*\?+|[^?]+$")
_COMPARISON = re.compile(
    r"^(?:.*?\b)?(?:differences?|distinction)\s+between\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)[?.!\s]*$"
    r"|^\s*(?:how\s+(?:does|do|did)\s+)?(?:compare|comparing)\s+(?P<c>.+?)\s+(?:and|with|to)\s+"
    r"(?P<d>.+?)[?.!\s]*$"
    r"|^\s*(?:how\s+(?:does|do|did|is|are)\s+)(?P<e>.+?)\s+(?:differ\s+from|compare\s+(?:to|with))"
    r"\s+(?P<f>.+?)[?.!\s]*$"
    r"|^(?P<g>[^?]+?)\s+(?:vs\.?|versus)\s+(?P<h>[^?]+?)[?.!\s]*$",
    re.IGNORECASE,
)
_BOTH = re.compile(
    r"\bboth\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)(?=[?,;.]|\s+(?:" + _AUX + r")\b|$)", re.I
)
_CLAUSE_AND = re.compile(r",?\s+(?:and|also)\s+(?=(?:" + _WH + r"|" + _AUX + r")\b)", re.I)
_COMMA_LIST = re.compile(
    r"^(?P<head>.*?)(?P<items>[^,?]+(?:,\s*[^,?]+)+?,?\s+(?:and|or)\s+[^,?]+?)(?P<tail>[?.!]*)\s*$"
)
_ITEM_START = re.compile(
    r".*\b(?:for|of|about|on|in|to|from|with|by|" + _AUX + r"|" + _DET + r")\s+", re.I
)
_HEAD = re.compile(r"^\s*(?P<head>" + _WH + r"(?:\s+\w+)?\s+" + _AUX + r")\s+(?P<rest>.+)$", re.I)
_REFERS_BACK = re.compile(
    r"\b(?:it|its|they|them|their|theirs|this|that|these|those|he|she|his|her)\b", re.I
)
_WORD = re.compile(r"\w+")
_TAIL_PARTICIPLE = re.compile(r"\s+(\w+(?:ed|en)|kept|held|paid|made|due|required|allowed)$", re.I)


@dataclass(frozen=True)
class StepPlan:
    """A sub-question, and the earlier steps (1-based) whose answers its retrieval uses."""

    question: str
    uses: tuple[int, ...] = ()


@dataclass(frozen=True)
class Plan:
    """The steps to answer in, who proposed them, and what the trace should say."""

    steps: list[StepPlan]
    proposed_by: str
    notes: list[str] = field(default_factory=list)


def _clean(text: str) -> str:
    return " ".join(text.split()).strip(" ,;:")


def _asked(text: str) -> str:
    """A sub-question as asked: capitalised, ending with a question mark."""
    text = _clean(text).rstrip("?.! ")
    return f"{text[:1].upper()}{text[1:]}?" if text else ""


def _words(text: str) -> int:
    return len(_WORD.findall(text))


def _list_items(question: str) -> list[str] | None:
    lines = [line for line in question.splitlines() if line.strip()]
    items = [m.group(1) for line in lines if (m := _LIST_LINE.match(line))]
    if len(items) < 2:
        return None
    lead = _clean(" ".join(line for line in lines if not _LIST_LINE.match(line))).rstrip(":")
    return [item if item.rstrip().endswith("?") or not lead else f"{lead} {item}" for item in items]


def _comparison(question: str) -> list[str] | None:
    found = _COMPARISON.match(question)
    if not found:
        return None
    pairs = [(found.group(a), found.group(b)) for a, b in ("ab", "cd", "ef", "gh")]
    a, b = next(pair for pair in pairs if pair[0] is not None)
    return [f"What is {_clean(a)}?", f"What is {_clean(b)}?"]


def _both(question: str) -> list[str] | None:
    found = _BOTH.search(question)
    if not found:
        return None
    before, after = question[: found.start()], question[found.end() :]
    return [f"{before}{found.group(part)}{after}" for part in ("a", "b")]


def _comma_list(question: str) -> list[str] | None:
    found = _COMMA_LIST.match(question.strip())
    if not found:
        return None
    head, items = found.group("head"), found.group("items")
    parts = [p for p in re.split(r",\s*(?:(?:and|or)\s+)?|\s+(?:and|or)\s+", items) if p.strip()]
    first = _ITEM_START.match(parts[0])  # the first item starts after its preposition
    if first and first.end() < len(parts[0]):
        head, parts[0] = head + parts[0][: first.end()], parts[0][first.end() :]
    if len(parts) < 3 or not head.strip():
        return None
    return [f"{head}{part}" for part in parts]


def _clauses(question: str) -> list[str] | None:
    pieces = [p for p in _CLAUSE_AND.split(question) if _clean(p)]
    if len(pieces) < 2 or any(_words(p) < 2 for p in pieces):  # "… and when?" asks one thing
        return None
    return pieces


def _noun_phrases(question: str) -> list[str] | None:
    """ "What is the A and the B?" → "What is the A?", "What is the B?"; two bare
    phrases need a question head ("How long are") and two words each."""
    at = question.lower().rfind(" and ")
    if at < 0:
        return None
    before, after = question[:at], question[at + 5 :]
    determiner = re.match(_DET + r"\b", after.strip(), re.I)
    if determiner:
        # A starts at the last same determiner before "and": "the length of [the A]"
        starts = [m.start() for m in re.finditer(rf"\b{determiner.group()}\b", before, re.I)]
        if not starts or starts[-1] == 0:
            return None
        head, first = before[: starts[-1]], before[starts[-1] :]
    else:
        found = _HEAD.match(before)
        if not found or _words(found.group("rest")) < 2 or _words(after) < 2:
            return None
        head, first = found.group("head") + " ", found.group("rest")
    tail = _TAIL_PARTICIPLE.search(after.rstrip("?.! "))
    if tail and not determiner:  # "… A and B kept?": the verb belongs to both
        first = f"{first} {tail.group(1)}"
    return [f"{head}{first}", f"{head}{after}"]


SHAPES = (
    ("a comparison", _comparison),
    ("'both'", _both),
    ("a list", _comma_list),
    ("two clauses", _clauses),
    ("'X and Y'", _noun_phrases),
)


def _split_one(question: str) -> tuple[list[str], str]:
    for name, split in SHAPES:
        parts = split(question)
        if parts:
            asked = [_asked(p) for p in parts]
            if all(_words(a) >= 1 for a in asked):
                return asked, name
    return [_asked(question)], ""


def _with_uses(questions: list[str], dependent: bool) -> list[StepPlan]:
    """A follow-up that refers back ("… and what is its phone number?") searches
    with the previous step's answer."""
    return [
        StepPlan(q, (n,) if dependent and n >= 1 and _REFERS_BACK.search(q) else ())
        for n, q in enumerate(questions)
    ]


def question_decompose(question: str, *, max_steps: int) -> Plan:
    """The steps ``question`` asks for, by its structure; at most ``max_steps``."""
    items = _list_items(question)
    if items:
        steps, shapes = [StepPlan(_asked(i)) for i in items], ["a list of items"]
    else:
        pieces = [p for p in (_clean(m.group()) for m in _QUESTION_PIECE.finditer(question)) if p]
        asked, shapes = [], []
        for piece in pieces if len(pieces) > 1 else [_clean(question)]:
            parts, shape = _split_one(piece)
            asked += parts
            shapes += [shape] if shape else []
        if len(pieces) > 1:
            shapes.insert(0, "several questions")
        steps = _with_uses(asked, dependent=True)
    steps = [s for s in steps if _clean(s.question).rstrip("?")]
    if len(steps) <= 1:
        return Plan([StepPlan(_asked(question) or question)], QUESTION_STRUCTURE, [])
    notes = [f"the question asks {len(steps)} things ({', '.join(shapes)})"]
    return plan_capped(Plan(steps, QUESTION_STRUCTURE, notes), max_steps)


def plan_capped(plan: Plan, max_steps: int) -> Plan:
    """At most ``max_steps`` steps; the trace says what was left out."""
    if len(plan.steps) <= max_steps:
        return plan
    kept = [StepPlan(s.question, tuple(u for u in s.uses if u <= max_steps)) for s in plan.steps]
    left = "; ".join(s.question for s in plan.steps[max_steps:])
    note = (
        f"capped at {max_steps} steps (PROVENANCE_REASONING_MAX_STEPS): "
        f"{len(plan.steps) - max_steps} not answered: {left}"
    )
    return Plan(kept[:max_steps], plan.proposed_by, [*plan.notes, note])
