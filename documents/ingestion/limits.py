"""Per-file limits: a bound on what one file may make, so a runaway file fails
with a reason an operator can act on instead of holding every worker."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings


@dataclass(frozen=True)
class FileLimit:
    """A bound on what one file may make, so a runaway file (one 20 MB line, a
    generated book) fails with a reason instead of holding every worker for an
    hour; named by its setting, which an operator can raise."""

    setting: str
    unit: str

    @property
    def value(self) -> int:
        return getattr(settings, self.setting)

    @property
    def label(self) -> str:
        """What ``File.refused_by`` records: the limit and its value at the time."""
        return f"{self.setting}={self.value}"

    def refusal(self, amount: int) -> str | None:
        """The reason a file making ``amount`` is refused, or ``None`` within the limit."""
        if amount <= self.value:
            return None
        return (
            f"the document makes {amount:,} {self.unit}, more than the {self.value:,} a file "
            f"may make ({self.setting}): split it into smaller files, or ask an operator to "
            "raise the limit and retry"
        )


MARKDOWN_LIMIT = FileLimit("PROVENANCE_MAX_MARKDOWN_BYTES", "bytes of Markdown")


CHUNKS_LIMIT = FileLimit("PROVENANCE_MAX_CHUNKS_PER_FILE", "chunks")


class LimitExceeded(Exception):
    """A file makes more than a :class:`FileLimit` allows."""

    def __init__(self, limit: FileLimit, reason: str) -> None:
        super().__init__(reason)
        self.limit, self.reason = limit, reason


def limit_check(limit: FileLimit, amount: int) -> None:
    reason = limit.refusal(amount)
    if reason is not None:
        raise LimitExceeded(limit, reason)
