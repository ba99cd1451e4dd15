"""The source viewer's pages, shared by the reader's own answer pages
(``citations/web/views.py``) and the officers' admin (``citations/admin.py``):
which answer they may open is the caller's business, what the viewer shows of
it is decided here once.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.http import Http404, HttpRequest, HttpResponse
from django.utils.http import quote_etag

from citations.models import QueryExecution
from citations.web import selectors
from citations.web.answers import crop_url
from citations.web.pdf_pages import RENDER_DPI
from citations.web.rendering import passage_html
from citations.web.viewer import highlight_crop, source_view

PAGE_LIMIT = 100_000  # a ``?page=`` beyond any document is ignored


@dataclass(frozen=True)
class ViewerLinks:
    """Where the viewer's own links lead: back to the answer, and the route of the
    cropped highlight of ``[n]`` (called with the query id and ``quoted_as``)."""

    back_url: str
    back_label: str
    crop_route: str


def page_asked(request: HttpRequest) -> int | None:
    """The page the reader moved to (``?page=``), else None: the cited pages."""
    raw = request.GET.get("page", "")
    return int(raw) if raw.isdigit() and 0 < int(raw) < PAGE_LIMIT else None


def source_page_context(
    request: HttpRequest, *, execution: QueryExecution, quoted_as: str, links: ViewerLinks
) -> dict:
    """What ``web/source.html`` draws for ``[quoted_as]`` of ``execution``."""
    quoted = selectors.quoted_source_of(execution=execution, quoted_as=quoted_as)
    claims = list(quoted.claims.order_by("segment"))
    ranges = [(c.source_start, c.source_end) for c in claims]
    return {
        "execution": execution,
        "quoted": quoted,
        "claims": claims,
        "links": links,
        "state": selectors.document_states([quoted.file])[quoted.file_id],
        "passage": passage_html(quoted.chunk_text, ranges),
        "view": source_view(
            chunk=quoted.chunk,
            claims=ranges,
            whole=request.GET.get("lines") == "all",
            page=page_asked(request),
        ),
        "crop_url": crop_url(quoted, segment=claims[0].segment, route=links.crop_route)
        if claims
        else "",
    }


def hit_page_context(
    request: HttpRequest, *, execution: QueryExecution, k_pos: int, links: ViewerLinks
) -> dict:
    """What ``web/source.html`` draws for the retrieval hit at rank ``k_pos``."""
    retrieved = selectors.hit_of(execution=execution, k_pos=k_pos)
    return {
        "execution": execution,
        "hit": retrieved,
        "claims": [],
        "links": links,
        "state": selectors.document_states([retrieved.file])[retrieved.file_id],
        "passage": passage_html(retrieved.chunk.chunk_text, []),
        "view": source_view(
            chunk=retrieved.chunk,
            claims=[],
            whole=request.GET.get("lines") == "all",
            page=page_asked(request),
        ),
    }


def source_crop_response(
    request: HttpRequest, *, execution: QueryExecution, quoted_as: str
) -> HttpResponse:
    """The highlighted band of a PDF page for one claim of ``[n]`` (``?claim=`` its
    segment; the first claim when absent), cached by the browser: evidence never changes."""
    quoted = selectors.quoted_source_of(execution=execution, quoted_as=quoted_as)
    claims = quoted.claims.order_by("segment")
    raw = request.GET.get("claim", "")
    if raw.isdigit():
        claims = claims.filter(segment=int(raw))
    ranges = [(c.source_start, c.source_end) for c in claims]
    if not ranges:
        raise Http404("no such claim")
    etag = quote_etag(f"{quoted.file.sha256}-{quoted.pk}-{raw}-{RENDER_DPI}")
    if request.headers.get("If-None-Match") == etag:
        return HttpResponse(status=304, headers={"ETag": etag})
    response = HttpResponse(
        highlight_crop(chunk=quoted.chunk, claims=ranges), content_type="image/png"
    )
    response["Cache-Control"] = "private, max-age=86400, immutable"
    response["ETag"] = etag
    return response
