"""How far a file revision is through ingestion, in words a person reads.

The pipeline stores one pair of counters per stage: pages while a PDF is
converted (the sandbox reports them every half second), pages after conversion
(``chunking`` shows ``pages/pages``) and chunks while embedding. Other formats
convert too quickly to report anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from documents.models import IN_PROGRESS_STATUSES, File, FileStatus

STAGES = (
    FileStatus.PENDING,
    FileStatus.CONVERTING,
    FileStatus.CHUNKING,
    FileStatus.EMBEDDING,
    FileStatus.READY,
)
_UNITS = {
    FileStatus.CONVERTING: "pages converted",
    FileStatus.CHUNKING: "pages converted",
    FileStatus.EMBEDDING: "chunks embedded",
}


@dataclass(frozen=True)
class Step:
    name: str
    state: str  # "done" | "current" | "todo"


@dataclass(frozen=True)
class Progress:
    in_progress: bool
    steps: list[Step]
    done: int
    total: int
    detail: str


def file_progress(record: File) -> Progress:
    """The stepper and counter shown next to one file."""
    status = FileStatus(record.status)
    current = STAGES.index(status) if status in STAGES else -1
    steps = [
        Step(stage.value, _state(index, current, status)) for index, stage in enumerate(STAGES)
    ]
    return Progress(
        in_progress=status in IN_PROGRESS_STATUSES,
        steps=steps,
        done=record.progress_done,
        total=record.progress_total,
        detail=_detail(record, status),
    )


def _state(index: int, current: int, status: FileStatus) -> str:
    if status == FileStatus.READY or index < current:
        return "done"
    return "current" if index == current else "todo"


def _detail(record: File, status: FileStatus) -> str:
    if status == FileStatus.PENDING:
        return "waiting for a worker"
    if status in _UNITS and record.progress_total:
        return f"{record.progress_done} of {record.progress_total} {_UNITS[status]}"
    if status == FileStatus.CONVERTING:
        return "converting to Markdown"
    if status == FileStatus.CHUNKING:
        return "cutting the Markdown into chunks"
    if status == FileStatus.EMBEDDING:
        return "embedding chunks"
    if status == FileStatus.READY:
        chunks = record.progress_total
        if not chunks:
            return "ready"
        return f"ready: {chunks} chunk{'s' if chunks != 1 else ''} searchable"
    return record.error_message or "failed"
