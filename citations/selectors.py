"""Reads of answers and their evidence, scoped to an app the caller may use."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from django.db.models import Prefetch, Q, QuerySet
from django.http import Http404
from rest_framework.exceptions import NotAuthenticated

from citations.llm_apps import app_find, app_visible_to
from citations.models import App, ClaimCitation, QueryExecution, QuotedSource
from citations.payload import revision_label
from citations.validation import validate_citations
from core.permissions import Reader
from core.roles import Reach
from documents.models import Chunk, Location, Organization


def app_for_caller(*, app_id: str, organization: Organization | None) -> App:
    """The app, if the caller may query it: 401 without credentials, else 404."""
    app = app_find(app_id=app_id)
    if app is not None and app_visible_to(app=app, organization=organization):
        return app
    if organization is None and app is not None:
        raise NotAuthenticated("this app is private: an API key is required")
    raise Http404("app not found")


def caller_is_member(*, app: App, organization: Organization | None) -> bool:
    """Whether the caller acts for the app's own organization (key or member): only
    such callers see every answer of the app and its internal fields."""
    return organization is not None and organization.pk == app.organization_id


def readable_queries(
    *, app: App, organization: Organization | None, reader: Reader, reach: Reach = Reach.READ
) -> QuerySet[QueryExecution]:
    """The app's answers the caller may read, by id: the ones ``reader`` reaches
    (core.roles ``Reach``: its own; every one its organization asked for a role that
    audits), and those asked anonymously (no key, no login: nobody to protect, and
    anyone may read them through the public app anyway).

    A caller of another organization reaches the app only because it is public, and
    reads by the same rule among the answers its own organization asked.
    """
    answers = QueryExecution.objects.filter(app=app)
    anonymous = Q(caller_user__isnull=True, caller_api_key__isnull=True)
    if organization is None:
        return answers.filter(anonymous)
    if caller_is_member(app=app, organization=organization):
        return answers.filter(anonymous | reader.reachable(reach))
    ours = Q(caller_api_key__organization=organization)
    ours |= Q(caller_user__memberships__organization=organization)
    return answers.filter(anonymous | (ours & reader.reachable(reach))).distinct()


def query_for_app(
    *,
    app: App,
    query_id: str,
    organization: Organization | None,
    reader: Reader,
    reach: Reach = Reach.READ,
) -> QueryExecution:
    """One answer of ``app`` the caller may read (``readable_queries``), else 404."""
    try:
        key = uuid.UUID(str(query_id))
    except ValueError as exc:
        raise Http404("query not found") from exc
    readable = readable_queries(app=app, organization=organization, reader=reader, reach=reach)
    execution = readable.filter(pk=key).first()
    if execution is None:
        raise Http404("query not found")
    return execution


def quoted_sources_of(*, execution: QueryExecution) -> QuerySet[QuotedSource]:
    return (
        QuotedSource.objects.filter(query=execution)
        .select_related("file", "chunk", "chunk__markdown", "query")
        .defer(
            "chunk__embedding",
            "chunk__chunk_text",
            "chunk__markdown__markdown",
            "chunk__markdown__line_pages",
            "chunk__markdown__front_matter",
        )
        .prefetch_related(
            Prefetch("claims", queryset=ClaimCitation.objects.order_by("segment")),
            Prefetch("chunk__locations", queryset=Location.objects.order_by("ordinal")),
        )
        .order_by("id")
    )


def claims_of(*, execution: QueryExecution) -> QuerySet[ClaimCitation]:
    return (
        ClaimCitation.objects.filter(query=execution)
        .select_related("quoted_source", "quoted_source__file")
        .order_by("segment")
    )


def quoted_spans_of(*, chunk_id: uuid.UUID | str) -> list[tuple[int, int]]:
    """Every span of a chunk's text that an answer quoted (offsets into ``chunk_text``,
    which never changes once written), in order."""
    spans = ClaimCitation.objects.filter(quoted_source__chunk_id=chunk_id).values_list(
        "source_start", "source_end"
    )
    return sorted(set(spans))


def _chunks_of(*, organization: Organization | None, snippet_ids: list[str]) -> dict[str, Chunk]:
    """The organization's chunks among ``snippet_ids`` (ids that are no UUID name none)."""
    valid = []
    for raw in snippet_ids:
        try:
            valid.append(uuid.UUID(raw))
        except ValueError:
            continue
    rows = (
        Chunk.objects.filter(organization=organization, pk__in=valid)
        .select_related("file", "vector_database")
        .defer("embedding", "chunk_text")
    )
    return {str(c.pk): c for c in rows}


def _only(values: set[str]) -> str | None:
    """The one value all agree on, else None (the validator then skips that check)."""
    return values.pop() if len(values) == 1 else None


def citations_validate(
    *,
    items: Sequence[Any],
    allow_cross_section: bool,
    organization: Organization | None,
) -> str:
    """The validator's verdict on citation payloads; snippets of ``organization`` are
    also checked against its live index: hash, analyzer, embed model, revision and
    span. A read: nothing is recorded."""
    ids = [str(i.get("snippet_id")) for i in items if isinstance(i, dict)]
    chunks = _chunks_of(organization=organization, snippet_ids=ids)
    databases = {c.vector_database_id: c.vector_database for c in chunks.values()}
    return validate_citations(
        items,
        allow_cross_section=allow_cross_section,
        live_index_hash=_only({d.index_hash for d in databases.values()}),
        read_analyzer=_only({d.analyzer for d in databases.values()}),
        live_embed_model=_only({d.embed_model_id for d in databases.values()}),
        revisions={k: revision_label(c.file.revision, c.file.sha256) for k, c in chunks.items()},
        spans={k: (c.char_start, c.char_end) for k, c in chunks.items()},
    )
