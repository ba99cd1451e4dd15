"""Answer pages for end users: ask, the answer with its sources, the source
viewer, history and PDF page images. Thin: each view reads through the
selectors (the answers the member's role reaches, core.roles: their own, every
one of the organization for a role that audits; continuing or rating an answer
is its asker's alone) or calls ``query_execute``, then renders."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import quote_etag
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from citations.feedback import FeedbackRejected, feedback_latest, feedback_record
from citations.generators import ModelError
from citations.models import FeedbackRating, QueryExecution
from citations.services.execution import query_execute
from citations.services.questions import QueryRejected
from citations.services.searching import IndexMismatch
from citations.threads.errors import ThreadRejected
from citations.web import selectors
from citations.web.answers import answer_page
from citations.web.conversation import earlier_turns, follow_up_ask
from citations.web.pdf_pages import RENDER_DPI, page_png
from citations.web.source_pages import (
    ViewerLinks,
    hit_page_context,
    source_crop_response,
    source_page_context,
)
from citations.web.streaming import answer_events
from core.caller import client_address, client_user_agent
from core.permissions import Reader
from core.roles import Action, Reach
from core.sse import event_stream
from documents import selectors as document_selectors
from documents.web.access import MemberRequest, member_required


@member_required(Action.ASK)
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
            execution = query_execute(
                app=app,
                question=question,
                user=request.user,
                origin="web",
                caller_address=client_address(request),
                user_agent=client_user_agent(request),
            )
        except QueryRejected as exc:
            error = exc.message.replace("'query'", "The question")
        except ModelError as exc:  # recorded as a failed answer; say what went wrong
            error = f"The model could not answer: {exc.message}"
        except IndexMismatch as exc:  # recorded as a failed answer; the index needs rebuilding
            error = f"This app's documents cannot be searched as they are: {exc.message}"
        else:
            return HttpResponseRedirect(reverse("web-answer", args=[execution.pk]), status=303)
    return render(
        request,
        "web/ask.html",
        {"apps": apps, "app": app, "question": question, "error": error},
        status=400 if error else 200,
    )


@member_required(Action.ASK)
@require_POST
def ask_stream(request: MemberRequest) -> StreamingHttpResponse:
    """The Ask and follow-up forms with JavaScript: the answer as server-sent events
    (``citations/web/streaming.py``); ``follow_up`` names the answer it follows."""
    question = request.POST.get("question", "")
    previous_id = request.POST.get("follow_up")
    address, agent = client_address(request), client_user_agent(request)
    if previous_id:
        previous = _own_answer(request, previous_id)

        def ask() -> QueryExecution:
            return follow_up_ask(
                previous=previous,
                question=question,
                user=request.user,
                caller_address=address,
                user_agent=agent,
            )

    else:
        app = selectors.app_of(
            organization=request.organization, app_id=request.POST.get("app", "")
        )

        def ask() -> QueryExecution:
            return query_execute(
                app=app,
                question=question,
                user=request.user,
                origin="web",
                caller_address=address,
                user_agent=agent,
            )

    return event_stream(answer_events(ask))


def _readable_answer(request: MemberRequest, query_id: str) -> QueryExecution:
    """An answer to read: the member's own, anyone's of the organization for a role
    that audits (core.roles)."""
    reader = Reader.of(request)
    return selectors.query_in_reach(
        organization=request.organization, reader=reader, query_id=query_id
    )


def _own_answer(request: MemberRequest, query_id: str) -> QueryExecution:
    """An answer to continue or rate: the member's own only."""
    return selectors.query_in_reach(
        organization=request.organization,
        reader=Reader.of(request),
        query_id=query_id,
        reach=Reach.OWN,
    )


def _answer_context(request: MemberRequest, execution: QueryExecution) -> dict:
    return {
        "own": Reader.of(request).owns(
            user_id=execution.caller_user_id, api_key_id=execution.caller_api_key_id
        ),
        "page": answer_page(execution=execution),
        "earlier": earlier_turns(execution=execution),
        "feedback": feedback_latest(execution=execution, user=request.user),
        "ratings": FeedbackRating.choices,
    }


@member_required(Action.ASK)
@require_GET
def answer(request: MemberRequest, query_id: str) -> HttpResponse:
    execution = _readable_answer(request, query_id)
    return render(request, "web/answer.html", _answer_context(request, execution))


@member_required(Action.ASK)
@require_POST
def follow_up(request: MemberRequest, query_id: str) -> HttpResponse:
    """A follow-up question without JavaScript: answered in the same thread."""
    previous = _own_answer(request, query_id)
    question = request.POST.get("question", "")
    try:
        execution = follow_up_ask(
            previous=previous,
            question=question,
            user=request.user,
            caller_address=client_address(request),
            user_agent=client_user_agent(request),
        )
    except (QueryRejected, ThreadRejected) as exc:
        error = exc.message.replace("'query'", "The question")
    except ModelError as exc:
        error = f"The model could not answer: {exc.message}"
    except IndexMismatch as exc:
        error = f"This app's documents cannot be searched as they are: {exc.message}"
    else:
        return HttpResponseRedirect(reverse("web-answer", args=[execution.pk]), status=303)
    context = {**_answer_context(request, previous), "follow_up_error": error}
    context["follow_up_question"] = question
    return render(request, "web/answer.html", context, status=400)


@member_required(Action.ASK)
@require_POST
def feedback(request: MemberRequest, query_id: str) -> HttpResponse:
    """Helpful or not, with an optional comment: recorded as evidence."""
    execution = _own_answer(request, query_id)
    try:
        feedback_record(
            execution=execution,
            user=request.user,
            rating=request.POST.get("rating", ""),
            comment=request.POST.get("comment", ""),
        )
    except FeedbackRejected as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, "Thank you: your feedback is recorded.")
    return HttpResponseRedirect(f"{reverse('web-answer', args=[execution.pk])}#feedback")


def _reader_links(execution: QueryExecution) -> ViewerLinks:
    return ViewerLinks(
        back_url=reverse("web-answer", args=[execution.pk]),
        back_label="Back to the answer",
        crop_route="web-source-crop",
    )


@member_required(Action.ASK)
@require_GET
def source(request: MemberRequest, query_id: str, quoted_as: str) -> HttpResponse:
    """``[n]`` in its original, as recorded when the answer was given."""
    execution = _readable_answer(request, query_id)
    context = source_page_context(
        request, execution=execution, quoted_as=quoted_as, links=_reader_links(execution)
    )
    return render(request, "web/source.html", context)


@member_required(Action.ASK)
@require_GET
def source_crop(request: MemberRequest, query_id: str, quoted_as: str) -> HttpResponse:
    """The highlighted band of a PDF page for one claim of ``[n]``: the ``[n]``
    previews and the phone viewer."""
    execution = _readable_answer(request, query_id)
    return source_crop_response(request, execution=execution, quoted_as=quoted_as)


@member_required(Action.ASK)
@require_GET
def hit(request: MemberRequest, query_id: str, k_pos: int) -> HttpResponse:
    """A retrieved but uncited unit in its original (no claim rests on it)."""
    execution = _readable_answer(request, query_id)
    context = hit_page_context(
        request, execution=execution, k_pos=k_pos, links=_reader_links(execution)
    )
    return render(request, "web/source.html", context)


@member_required(Action.ASK)
@require_GET
def history(request: MemberRequest) -> HttpResponse:
    page = selectors.history_page(
        organization=request.organization, user=request.user, number=request.GET.get("page")
    )
    rows = [(e, selectors.execution_changed(e)) for e in page.object_list]
    return render(request, "web/history.html", {"page": page, "rows": rows})


@member_required(Action.READ_DOCUMENTS)
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
