"""The citation validator of the retrieval-traceability document.

Return codes: ``ok``, ``empty_citations``, ``missing_<field>``, ``bad_offsets``,
``cross_section_reuse``, ``missing_score``, ``mismatch_index_hash``,
``analyzer_mismatch`` and ``revision_mismatch`` (the revision lock).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from citations.payload import REQUIRED_FIELDS

RETURN_CODES = (
    "ok",
    "empty_citations",
    "bad_offsets",
    "cross_section_reuse",
    "missing_score",
    "mismatch_index_hash",
    "analyzer_mismatch",
    "revision_mismatch",
) + tuple(f"missing_{field}" for field in REQUIRED_FIELDS)


def _offsets_ok(offsets: Any, unit: str | None) -> bool:
    if not isinstance(offsets, Mapping):
        return False
    start, end = offsets.get("start"), offsets.get("end")
    if not isinstance(start, int) or not isinstance(end, int) or isinstance(start, bool):
        return False
    return 0 <= start < end and offsets.get("unit", "char") == (unit or offsets.get("unit", "char"))


def validate_citations(
    items: Sequence[Mapping[str, Any]],
    *,
    allow_cross_section: bool = False,
    live_index_hash: str | None = None,
    read_analyzer: str | None = None,
    revisions: Mapping[str, str] | None = None,
) -> str:
    """The first rule a citation list breaks, or ``ok``.

    ``live_index_hash``/``read_analyzer`` are the read path's values;
    ``revisions`` maps snippet ids to the revision that produced them.
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
        if not _offsets_ok(item["offsets"], unit):
            return "bad_offsets"
        if not allow_cross_section and item["section_id"] != section:
            return "cross_section_reuse"
        if item.get("score_raw") is None and item.get("score_norm") is None:
            return "missing_score"
        if live_index_hash is not None and item["index_hash"] != live_index_hash:
            return "mismatch_index_hash"
        if read_analyzer is not None and item["analyzer"] != read_analyzer:
            return "analyzer_mismatch"
        if revisions is not None and revisions.get(str(item["snippet_id"])) != item["rev"]:
            return "revision_mismatch"
    return "ok"
