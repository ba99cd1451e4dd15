"""Answer pages for end users: ask, the answer with its sources, the source
viewer, history and PDF page images. Thin: each view reads through the
selectors (always the signed-in user's own answers, in their organization)
or calls ``query_execute``, then renders."""

from __future__ import annotations

from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import quote_etag
from django.views.decorators.http import require_GET, require_http_methods

from citations.generators import ModelError
from citations.services import QueryRejected, query_execute
from citations.web import selectors
from citations.web.answers import answer_page
from citations.web.pdf_pages import RENDER_DPI, page_png
from citations.web.rendering import marked
from citations.web.viewer import source_view
from documents import selectors as document_selectors
from documents.web.access import MemberRequest, member_required


@member_required
@require_http_methods(["GET", "POST"])
def ask(request: MemberRequest) -> HttpResponse:
    """The question box of the chosen app; POST answers and shows the answer page."""
    apps = list(selectors.apps_of(organization=request.organization))
    chosen = request.POST.get("app") or request.GET.get("app")
    app = selectors.app_of(organization=request.organization, app_id=chosen) if chosen else None
    app = app or (apps[0] if apps else None)
    question, error = "", ""
    if request.method == "POST" and app is not None:
        question = request.POST.get("question", "")
        try:
            execution = query_execute(app=app, question=question, user=request.user, origin="web")
        except QueryRejected as exc:
            error = exc.message.replace("'query'", "The question")
        except ModelError as exc:  # recorded as a failed answer; say what went wrong
            error = f"The model could not answer: {exc.message}"
        else:
            return HttpResponseRedirect(reverse("web-answer", args=[execution.pk]), status=303)
    return render(
        request,
        "web/ask.html",
        {"apps": apps, "app": app, "question": question, "error": error},
        status=400 if error else 200,
    )


@member_required
@require_GET
def answer(request: MemberRequest, query_id: str) -> HttpResponse:
    execution = selectors.query_of_user(
        organization=request.organization, user=request.user, query_id=query_id
    )
    return render(request, "web/answer.html", {"page": answer_page(execution=execution)})


@member_required
@require_GET
def source(request: MemberRequest, query_id: str, quoted_as: str) -> HttpResponse:
    """``[n]`` in its original, as recorded when the answer was given."""
    execution = selectors.query_of_user(
        organization=request.organization, user=request.user, query_id=query_id
    )
    quoted = selectors.quoted_source_of(execution=execution, quoted_as=quoted_as)
    claims = list(quoted.claims.order_by("segment"))
    context = {
        "execution": execution,
        "quoted": quoted,
        "claims": claims,
        "state": selectors.document_states([quoted.file])[quoted.file_id],
        "passage": marked(
            quoted.chunk_text,
            [(c.source_start, c.source_end) for c in claims],
            for_reading=True,
        ),
        "view": source_view(
            chunk=quoted.chunk,
            claims=[(c.source_start, c.source_end) for c in claims],
            whole=request.GET.get("lines") == "all",
        ),
    }
    return render(request, "web/source.html", context)


@member_required
@require_GET
def hit(request: MemberRequest, query_id: str, k_pos: int) -> HttpResponse:
    """A retrieved but uncited unit in its original (no claim rests on it)."""
    execution = selectors.query_of_user(
        organization=request.organization, user=request.user, query_id=query_id
    )
    retrieved = selectors.hit_of(execution=execution, k_pos=k_pos)
    context = {
        "execution": execution,
        "hit": retrieved,
        "claims": [],
        "state": selectors.document_states([retrieved.file])[retrieved.file_id],
        "passage": marked(retrieved.chunk.chunk_text, [], for_reading=True),
        "view": source_view(
            chunk=retrieved.chunk, claims=[], whole=request.GET.get("lines") == "all"
        ),
    }
    return render(request, "web/source.html", context)


@member_required
@require_GET
def history(request: MemberRequest) -> HttpResponse:
    page = selectors.history_page(
        organization=request.organization, user=request.user, number=request.GET.get("page")
    )
    rows = [(e, selectors.execution_changed(e)) for e in page.object_list]
    return render(request, "web/history.html", {"page": page, "rows": rows})


@member_required
@require_GET
def page_image(request: MemberRequest, file_id: str, number: int) -> HttpResponse:
    """A PDF page as PNG; the bytes of a revision never change, so caching is safe."""
    record = document_selectors.file_get(organization=request.organization, file_id=file_id)
    etag = quote_etag(f"{record.sha256}-{number}-{RENDER_DPI}")
    if request.headers.get("If-None-Match") == etag:
        return HttpResponse(status=304, headers={"ETag": etag})
    response = HttpResponse(page_png(record, number), content_type="image/png")
    response["Cache-Control"] = "private, max-age=86400, immutable"
    response["ETag"] = etag
    return response
