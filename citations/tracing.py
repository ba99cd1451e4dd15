"""The grep-friendly trace line, one per question (seg=0) and per answer
segment, logged to ``provenance.trace`` and stored in ``rag_traces``."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

logger = logging.getLogger("provenance.trace")


@dataclass(frozen=True)
class TraceSegment:
    seg: int
    delta_s: float
    lambda_state: str
    section_id: str
    rev: str
    citations: Sequence[str]
    scores: Sequence[float]
    kpos: Sequence[int]
    kfinal: Sequence[int | None]


def _list(values: Sequence[object]) -> str:
    return "[" + ",".join("null" if v is None else str(v) for v in values) + "]"


def trace_line(
    *, ts: datetime, qid: str, k: int, index_hash: str, embed_model: str, segment: TraceSegment
) -> str:
    return (
        f"ts={ts.isoformat()} qid={qid} seg={segment.seg} deltaS={segment.delta_s:.2f} "
        f"lambda={segment.lambda_state} k={k} store=pgvector index_hash={index_hash} "
        f"embed={embed_model} citations={_list(segment.citations)} "
        f"scores={_list([round(s, 4) for s in segment.scores])} kpos={_list(segment.kpos)} "
        f"kfinal={_list(segment.kfinal)} section_id={json.dumps(segment.section_id)} "
        f"rev={segment.rev}"
    )


def trace_emit(line: str) -> None:
    logger.info(line)
