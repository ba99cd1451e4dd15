"""The citation validator of the retrieval-traceability document.

Return codes: ``ok``, ``empty_citations``, ``missing_<field>``, ``bad_offsets``,
``cross_section_reuse``, ``missing_score``, ``mismatch_index_hash``,
``analyzer_mismatch``, and four of ours: ``revision_mismatch`` (the revision
lock), ``embed_model_mismatch`` (the payload's model is not the live index's),
``marker_mismatch`` (a stored answer's ``[n]`` markers are not exactly its quoted
sources, numbered in order of first use) and ``invalid_<field>`` (a field of the wrong
type or range: ``"tokens": "many"``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from numbers import Real
from typing import Any, TypeGuard

from citations.payload import REQUIRED_FIELDS

_TEXT_FIELDS = tuple(f for f in REQUIRED_FIELDS if f not in ("offsets", "tokens"))
# whole numbers of at least 0, and numbers (``score_norm`` also within 0..1)
_COUNTS = ("tokens", "page", "k_pos", "k_final")
_SCORES = ("score_raw", "score_norm", "rerank_score")
UNITS = ("char", "token")

RETURN_CODES = (
    "ok",
    "empty_citations",
    "bad_offsets",
    "cross_section_reuse",
    "missing_score",
    "mismatch_index_hash",
    "analyzer_mismatch",
    "revision_mismatch",
    "embed_model_mismatch",
    "marker_mismatch",
    *(f"missing_{field}" for field in REQUIRED_FIELDS),
    *(f"invalid_{field}" for field in (*_TEXT_FIELDS, *_COUNTS, *_SCORES)),
)


# what a result means for an answer given earlier, re-checked against the live
# index: for a compliance officer reading a past answer (the evidence itself, as
# recorded and chained, does not change)
LATER_MEANINGS = {
    "ok": "the cited chunks, revisions and index are still those the answer used.",
    "empty_citations": "the answer cites nothing: nothing relevant was found.",
    "mismatch_index_hash": (
        "documents were added, changed or deleted in the index since this answer: "
        "expected for any older answer. The evidence recorded here is unchanged; asking "
        "again answers from the current documents."
    ),
    "revision_mismatch": (
        "a quoted document has a newer revision since this answer; the quoted revision "
        "and its original bytes stay stored and downloadable."
    ),
    "analyzer_mismatch": "the full-text search configuration changed since this answer.",
    "embed_model_mismatch": "the embedding model of the index changed since this answer.",
    "marker_mismatch": (
        "the answer's [n] markers are not exactly its quoted sources: the recorded answer "
        "text was changed after it was given."
    ),
}


def later_meaning(result: str) -> str:
    """``LATER_MEANINGS`` for ``result``; other codes mean a broken payload."""
    return LATER_MEANINGS.get(result, "the recorded citation payload breaks a rule: see the code.")


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _invalid_field(item: Mapping[str, Any]) -> str | None:
    """The first field whose value has the wrong type or range (absent optional
    fields and null optional values are fine)."""
    for field in _TEXT_FIELDS:
        if not isinstance(item[field], str):
            return field
    for field in _COUNTS:
        value = item.get(field)
        if (field == "tokens" or value is not None) and not (_is_int(value) and value >= 0):
            return field
    for field in _SCORES:
        value = item.get(field)
        if value is not None and (not isinstance(value, Real) or isinstance(value, bool)):
            return field
    norm = item.get("score_norm")
    if norm is not None and not 0 <= norm <= 1:
        return "score_norm"
    return None


def _offsets_ok(offsets: Any, unit: str | None, span: tuple[int, int] | None) -> bool:
    """``start < end``, of a known unit, the run's unit; inside ``span`` (the stored
    chunk's character range) when the snippet is known, whose unit is ``char``."""
    if not isinstance(offsets, Mapping):
        return False
    start, end = offsets.get("start"), offsets.get("end")
    if not _is_int(start) or not _is_int(end):
        return False
    own_unit = offsets.get("unit", "char")
    if own_unit not in UNITS or own_unit != (unit or own_unit) or not 0 <= start < end:
        return False
    if span is not None:
        return own_unit == "char" and span[0] <= start and end <= span[1]
    return True


def validate_citations(
    items: Sequence[Mapping[str, Any]],
    *,
    allow_cross_section: bool = False,
    live_index_hash: str | None = None,
    read_analyzer: str | None = None,
    revisions: Mapping[str, str] | None = None,
    live_embed_model: str | None = None,
    spans: Mapping[str, tuple[int, int]] | None = None,
) -> str:
    """The first rule a citation list breaks, or ``ok``.

    ``live_index_hash``/``read_analyzer``/``live_embed_model`` are the read path's
    values; ``revisions`` maps snippet ids to the revision that produced them and
    ``spans`` to their stored character ranges.
    """
    if not items:
        return "empty_citations"
    if not all(isinstance(item, Mapping) for item in items):
        return "missing_snippet_id"
    section = items[0].get("section_id")
    unit = (
        items[0].get("offsets", {}).get("unit")
        if isinstance(items[0].get("offsets"), Mapping)
        else None
    )
    for item in items:
        for field in REQUIRED_FIELDS:
            if field not in item or item[field] is None:
                return f"missing_{field}"
        if not _offsets_ok(item["offsets"], unit, (spans or {}).get(str(item["snippet_id"]))):
            return "bad_offsets"
        invalid = _invalid_field(item)
        if invalid:
            return f"invalid_{invalid}"
        if not allow_cross_section and item["section_id"] != section:
            return "cross_section_reuse"
        if item.get("score_raw") is None and item.get("score_norm") is None:
            return "missing_score"
        if live_index_hash is not None and item["index_hash"] != live_index_hash:
            return "mismatch_index_hash"
        if read_analyzer is not None and item["analyzer"] != read_analyzer:
            return "analyzer_mismatch"
        if live_embed_model is not None and item["embed_model"] != live_embed_model:
            return "embed_model_mismatch"
        if revisions is not None and revisions.get(str(item["snippet_id"])) != item["rev"]:
            return "revision_mismatch"
    return "ok"
