"""Verifying a model's citations (DESIGN invariant 9): a claim counts as cited only
if its snippet is one of this request's passages, its quote is found verbatim in
that chunk (whitespace-normalised; the exact chunk offsets are recorded), its
payload fields pass the validator and match what was issued, and the sentence is
close enough in meaning to the quote (the support score is recorded).

Citations can only point into the passages of this request by construction:
anything else is an unknown snippet, whatever a document or the model says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from citations.generators import SUPPORTED, Claim, ClaimCheck, Passage
from citations.validation import validate_citations
from retrieval.embedders import default_embedder

# the fields a model copies from a snippet's payload into its citation
CONTRACT_FIELDS = ("snippet_id", "section_id", "source_url", "offsets", "tokens")
# a sentence less like its quote in meaning than this (cosine of the sentence
# embeddings) is not supported by it: a paraphrase of the quote scores well above,
# a claim about something else far below
MIN_SUPPORT = 0.5

# reasons a citation is not supported, besides the validator's own codes
REASONS = {
    "no_citation": "the sentence cites no snippet",
    "unknown_snippet": "the cited snippet is not one of the passages retrieved for this question",
    "missing_quote": "the citation quotes nothing",
    "quote_not_found": "the quote is not found verbatim in the cited snippet",
    "low_support": "the sentence does not say what the quote says",
    "cross_section_reuse": "the sentence mixes citations of different sections",
    "citations_after_answer": "the reply explained before citing (the contract says cite first)",
    "bad_citation_index": "the sentence refers to a citation that does not exist",
}


def _same(claimed: Any, issued: Any) -> bool:
    if isinstance(issued, Mapping) and isinstance(claimed, Mapping):
        return {**{"unit": "char"}, **claimed} == {**{"unit": "char"}, **issued}
    return claimed == issued and type(claimed) is type(issued)


def payload_code(claimed: Mapping[str, Any], issued: Mapping[str, Any]) -> str:
    """``ok``, the validator's code for the model's fields over the issued payload,
    or ``mismatch_<field>`` for a field copied wrong."""
    merged = {**issued, **{f: claimed.get(f) for f in CONTRACT_FIELDS}}
    offsets = issued["offsets"]
    code = validate_citations(
        [merged],
        read_analyzer=issued["analyzer"],
        revisions={str(issued["snippet_id"]): issued["rev"]},
        spans={str(issued["snippet_id"]): (offsets["start"], offsets["end"])},
    )
    if code != "ok":
        return code
    for name in CONTRACT_FIELDS:
        if not _same(claimed.get(name), issued[name]):
            return f"mismatch_{name}"
    return "ok"


def issued_code(issued: Mapping[str, Any]) -> str:
    """The validator's code for a payload as issued (a provider's citation names a
    passage, not its fields)."""
    offsets = issued["offsets"]
    return validate_citations(
        [issued],
        read_analyzer=issued["analyzer"],
        revisions={str(issued["snippet_id"]): issued["rev"]},
        spans={str(issued["snippet_id"]): (offsets["start"], offsets["end"])},
    )


def _supports(pairs: Sequence[tuple[str, str]]) -> list[float]:
    if not pairs:
        return []
    texts = [text for pair in pairs for text in pair]
    vectors = np.asarray(default_embedder().embed_sentences(texts), dtype=float)
    norms = np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    vectors = vectors / norms
    return [float(vectors[2 * i] @ vectors[2 * i + 1]) for i in range(len(pairs))]


def checks_scored(checks: Sequence[ClaimCheck], passages: Sequence[Passage]) -> list[ClaimCheck]:
    """Support scores for the citations that passed every other check (one batch of
    embeddings), then the section fence: a sentence's citations share its first
    supported citation's section."""
    pending = [i for i, check in enumerate(checks) if check.supported]
    pairs = [(checks[i].reply, _quoted(checks[i], passages)) for i in pending]
    scored = list(checks)
    for i, support in zip(pending, _supports(pairs), strict=True):
        reason = SUPPORTED if support >= MIN_SUPPORT else "low_support"
        scored[i] = replace(scored[i], support=round(support, 6), reason=reason)
    return _fenced(scored, passages)


def _quoted(check: ClaimCheck, passages: Sequence[Passage]) -> str:
    """The passage text a supported check quotes."""
    passage, start, end = check.located()
    return passages[passage].text[start:end]


def _section(passage: Passage) -> str:
    return str((passage.payload or {}).get("section_id", ""))


def _fenced(checks: list[ClaimCheck], passages: Sequence[Passage]) -> list[ClaimCheck]:
    sections: dict[int, str] = {}
    fenced = []
    for check in checks:
        if check.supported:
            section = _section(passages[check.located()[0]])
            first = sections.setdefault(check.sentence, section)
            if section != first:
                check = replace(check, reason="cross_section_reuse")
        fenced.append(check)
    return fenced


def claims_of(checks: Sequence[ClaimCheck]) -> list[Claim]:
    """The supported citations as claims, in reply order (one per sentence and passage)."""
    claims: list[Claim] = []
    seen: set[tuple[int, int | None]] = set()
    for check in checks:
        key = (check.sentence, check.passage)
        if check.supported and key not in seen:
            seen.add(key)
            passage, start, end = check.located()
            claims.append(
                Claim(
                    passage=passage,
                    source_start=start,
                    source_end=end,
                    reply=check.reply,
                    relevance=check.support or 0.0,
                    sentence=check.sentence,
                )
            )
    return claims


def sentence_clean(text: object) -> str:
    """A reply sentence as written into the answer: one line, single spaces."""
    return " ".join(str(text).split()) if text is not None else ""
