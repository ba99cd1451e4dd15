"""Cursor pagination the way OpenAI lists do it (``limit``, ``order``, ``after``,
``before``; an answer ``{"object": "list", "data", "first_id", "last_id",
"has_more"}``), for every list of the API: threads' messages and runs, a data
source's files."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db.models import Model, Q, QuerySet
from django.http import QueryDict
from drf_spectacular.utils import OpenApiParameter

from core.exceptions import DomainRejected

M = TypeVar("M", bound=Model)

MAX_LIMIT = 100
DEFAULT_LIMIT = 20

LIST_PARAMETERS = [
    OpenApiParameter(
        "limit",
        {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
        description=f"1..{MAX_LIMIT}, default {DEFAULT_LIMIT}",
    ),
    OpenApiParameter("order", str, enum=["asc", "desc"], description="by created_at"),
    OpenApiParameter("after", str, description="an id of this list"),
    OpenApiParameter("before", str, description="an id of this list"),
]


class PageRejected(DomainRejected):
    """A list parameter that names no page (a bad limit, order or cursor)."""


@dataclass(frozen=True)
class ListParams:
    limit: int
    order: str
    after: str | None
    before: str | None

    def as_kwargs(self) -> dict[str, Any]:
        return {
            "limit": self.limit,
            "order": self.order,
            "after": self.after,
            "before": self.before,
        }


def list_params(query: QueryDict) -> ListParams:
    """``limit`` 1..100 (default 20), ``order`` asc|desc (default desc), ``after``, ``before``."""
    raw_limit = query.get("limit", str(DEFAULT_LIMIT))
    try:
        limit = int(raw_limit)
    except ValueError:
        limit = 0
    if not 1 <= limit <= MAX_LIMIT:
        raise PageRejected(
            f"limit must be an integer from 1 to {MAX_LIMIT}", code="invalid_limit", param="limit"
        )
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise PageRejected("order must be 'asc' or 'desc'", code="invalid_order", param="order")
    return ListParams(limit, order, query.get("after") or None, query.get("before") or None)


def list_output(
    items: Sequence[Any], has_more: bool, shape: Callable[[Any], dict], *, id_field: str = "id"
) -> dict:
    """The list envelope; ``first_id``/``last_id`` are the ``id_field`` of its ends."""
    data = [shape(item) for item in items]
    return {
        "object": "list",
        "data": data,
        "first_id": data[0][id_field] if data else None,
        "last_id": data[-1][id_field] if data else None,
        "has_more": has_more,
    }


@dataclass(frozen=True)
class Page(Generic[M]):
    items: list[M]
    has_more: bool


def _uuid(raw: object) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(raw))
    except ValueError:
        return None


def page_of(
    queryset: QuerySet[M], *, limit: int, order: str, after: str | None, before: str | None
) -> Page[M]:
    """OpenAI cursor pagination over ``(created_at, id)``; cursors are ids of the same list."""
    ascending = order == "asc"
    for param, cursor in (("after", after), ("before", before)):
        if cursor is None:
            continue
        key = _uuid(cursor)
        anchor = queryset.filter(pk=key).values("created_at", "pk").first() if key else None
        if anchor is None:
            raise PageRejected(
                f"{param} names no object of this list", code="invalid_cursor", param=param
            )
        later = (param == "after") == ascending  # "after" in a newest-first list is older
        queryset = queryset.filter(_beyond(anchor, later=later))
    backwards = before is not None and after is None
    forward = ascending != backwards
    fields = ("created_at", "id") if forward else ("-created_at", "-id")
    rows = list(queryset.order_by(*fields)[: limit + 1])
    items = rows[:limit]
    if backwards:
        items.reverse()
    return Page(items=items, has_more=len(rows) > limit)


def _beyond(anchor: dict, *, later: bool) -> Q:
    op = "gt" if later else "lt"
    return Q(**{f"created_at__{op}": anchor["created_at"]}) | Q(
        created_at=anchor["created_at"], **{f"id__{op}": anchor["pk"]}
    )
