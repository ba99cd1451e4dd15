"""Reads behind the answer pages, scoped to the signed-in member's organization and
to the answers their role reaches (``query_in_reach``): their own, and every
answer of the organization for a role that audits. The history lists their own."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import User
from django.core.paginator import Page, Paginator
from django.db.models import Prefetch, QuerySet
from django.http import Http404

from citations.models import App, ClaimCitation, QueryExecution, QuotedSource, RetrievalHit
from core.permissions import Reader
from core.roles import Reach
from documents.models import File, Location, Organization

HISTORY_PER_PAGE = 25


def _uuid(raw: str) -> uuid.UUID:
    try:
        return uuid.UUID(str(raw))
    except ValueError as exc:
        raise Http404("not found") from exc


def apps_of(*, organization: Organization) -> QuerySet[App]:
    return App.objects.filter(organization=organization).order_by("name")


def app_of(*, organization: Organization, app_id: str) -> App:
    app = apps_of(organization=organization).filter(pk=_uuid(app_id)).first()
    if app is None:
        raise Http404("app not found")
    return app


def query_in_reach(
    *, organization: Organization, reader: Reader, query_id: str, reach: Reach = Reach.READ
) -> QueryExecution:
    """One answer of the organization that ``reader`` reaches (core.roles ``Reach``):
    reading, its own or, for a role that audits, anyone's; continuing or rating
    (``Reach.OWN``), its own only. Anything else is a 404, other tenants' alike."""
    execution = (
        QueryExecution.objects.select_related("app")
        .filter(reader.reachable(reach), pk=_uuid(query_id), organization=organization)
        .first()
    )
    if execution is None:
        raise Http404("answer not found")
    return execution


def history_page(*, organization: Organization, user: User, number: str | None) -> Page:
    """The user's questions, newest first, with the files their sources cite."""
    cited = QuotedSource.objects.select_related("file").only(
        "query_id", "quoted_as", "file__superseded_at", "file__deleted_at"
    )
    executions = (
        QueryExecution.objects.filter(organization=organization, caller_user=user)
        .select_related("app")
        .prefetch_related(Prefetch("quoted_sources", queryset=cited))
        .order_by("-created_at")
    )
    return Paginator(executions, HISTORY_PER_PAGE).get_page(number)


def quoted_sources_for_page(*, execution: QueryExecution) -> list[QuotedSource]:
    """The quoted sources (snapshots) with their cited revision and claims."""
    claims = ClaimCitation.objects.order_by("segment")
    return list(
        QuotedSource.objects.filter(query=execution)
        .select_related("file", "chunk")
        .defer("chunk__embedding", "chunk__chunk_text")
        .prefetch_related(
            Prefetch("claims", queryset=claims),
            Prefetch("chunk__locations", queryset=Location.objects.order_by("ordinal")),
        )
        .order_by("id")
    )


def quoted_source_of(*, execution: QueryExecution, quoted_as: str) -> QuotedSource:
    source = (
        QuotedSource.objects.filter(query=execution, quoted_as=quoted_as)
        .select_related("file", "file__data_source", "chunk", "chunk__markdown", "hit")
        .defer("chunk__embedding")
        .first()
    )
    if source is None:
        raise Http404("source not found")
    return source


def uncited_hits_of(*, execution: QueryExecution) -> list[RetrievalHit]:
    """What the retriever found but the answer does not cite, best first."""
    cited = QuotedSource.objects.filter(query=execution).values("hit_id")
    return list(
        RetrievalHit.objects.filter(query=execution)
        .exclude(pk__in=cited)
        .select_related("file", "chunk")
        .defer("chunk__embedding", "chunk__search_vector")
        .order_by("k_pos")
    )


def hit_of(*, execution: QueryExecution, k_pos: int) -> RetrievalHit:
    hit = (
        RetrievalHit.objects.filter(query=execution, k_pos=k_pos)
        .select_related("file", "file__data_source", "chunk", "chunk__markdown")
        .defer("chunk__embedding")
        .first()
    )
    if hit is None:
        raise Http404("retrieved unit not found")
    return hit


# --- has the document changed since the answer? ----------------------------------------


@dataclass(frozen=True)
class DocumentState:
    """What became of a cited file revision after the answer was given."""

    deleted_at: datetime | None
    deletion_reason: str
    newer: File | None  # the revision that now replaces the cited one

    @property
    def changed(self) -> bool:
        return self.deleted_at is not None or self.newer is not None


def document_states(files: Iterable[File]) -> dict[uuid.UUID, DocumentState]:
    """State of each cited revision, keyed by file id, in one query at most."""
    files = list({f.pk: f for f in files}.values())
    superseded = [f for f in files if f.superseded_at is not None]
    newest: dict[tuple[uuid.UUID, str], File] = {}
    if superseded:
        candidates = File.objects.filter(
            data_source_id__in={f.data_source_id for f in superseded},
            name__in={f.name for f in superseded},
            ready_at__isnull=False,  # published, even while converted again
            superseded_at__isnull=True,
        ).order_by("revision")
        newest = {(f.data_source_id, f.name): f for f in candidates}
    return {
        f.pk: DocumentState(
            deleted_at=f.deleted_at,
            deletion_reason=f.deletion_reason,
            newer=newest.get((f.data_source_id, f.name)) if f.superseded_at else None,
        )
        for f in files
    }


def execution_changed(execution: QueryExecution) -> bool:
    """Any cited document deleted or replaced since (uses the prefetched sources)."""
    return any(
        s.file.superseded_at is not None or s.file.deleted_at is not None
        for s in execution.quoted_sources.all()
    )
