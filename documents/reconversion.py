"""Converting files again when their converter changed: which files are outdated,
and queueing them. The ``reconvert`` command and the admin's "Convert again" action
both call this, so they pick the same files and record the same reasons."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db.models import QuerySet

from documents.converters import KINDS, converter_for
from documents.ingestion.requeue import file_reconvert
from documents.models import File
from documents.selectors import converter_change, markdowns_outdated

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser


@dataclass(frozen=True)
class OutdatedFile:
    """A current, ready file whose Markdown an older converter version produced."""

    file: File
    change: str  # what converting it again changes: "name version -> name version"


def files_outdated(
    *,
    files: QuerySet[File] | None = None,
    kinds: Iterable[str] = KINDS,
    limit: int | None = None,
) -> tuple[list[OutdatedFile], int]:
    """The outdated files of ``kinds`` (of ``files`` if given), in the order
    ``markdowns_outdated`` gives, at most ``limit``; and how many more are left past it."""
    current = {kind: converter_for(kind) for kind in kinds}
    outdated = markdowns_outdated(current=current, files=files)
    markdowns = list(outdated if limit is None else outdated[:limit])
    left = outdated.count() - len(markdowns) if limit is not None else 0
    found = [
        OutdatedFile(
            file=markdown.file,
            change=converter_change(markdown=markdown, current=current[markdown.file.kind]),
        )
        for markdown in markdowns
    ]
    return found, left


def outdated_file_reconvert(
    *,
    outdated: OutdatedFile,
    why: str,
    user: AbstractBaseUser | None = None,
    origin: str | None = None,
    user_agent: str | None = None,
) -> bool:
    """Queue one outdated file, recording ``why`` and the converter change as the
    reason; False when it is no longer ready (``file_reconvert``)."""
    reason = f"{why}: {outdated.change}"
    return file_reconvert(
        file=outdated.file, reason=reason, user=user, origin=origin, user_agent=user_agent
    )


def files_reconvert_outdated(
    *,
    files: QuerySet[File],
    why: str,
    user: AbstractBaseUser | None = None,
    origin: str | None = None,
    user_agent: str | None = None,
) -> int:
    """Queue every outdated file of ``files``; how many were queued."""
    outdated, _ = files_outdated(files=files)
    return sum(
        outdated_file_reconvert(
            outdated=item, why=why, user=user, origin=origin, user_agent=user_agent
        )
        for item in outdated
    )
