"""A document's page in the library: its revisions (who, when, sha256, size, status,
place in the queue), the chunks of one revision with their locations, the answers
that cite it, the download of each revision, and deletion with a reason. Thin:
read through the selectors or call one service."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from audit.events import document_event_record
from core.caller import Caller
from core.roles import Action, role_allows
from documents import selectors
from documents.downloads import original_download_page
from documents.ingestion.delete import MAX_REASON_CHARS, AlreadyDeleted, file_delete
from documents.models import IN_PROGRESS_STATUSES, File
from documents.web.access import MemberRequest, member_required
from documents.web.selectors import (
    chunks_page,
    citing_answers,
    document_revisions,
    revision_rows,
    revision_shown,
)


@member_required(Action.READ_DOCUMENTS)
@require_GET
def document(request: MemberRequest, document_id: str) -> HttpResponse:
    revisions = document_revisions(organization=request.organization, document_id=document_id)
    shown = revision_shown(revisions, request.GET.get("revision"))
    context = {
        "document": revisions[0],
        "rows": revision_rows(revisions),
        "shown": shown,
        "chunks": chunks_page(file=shown, number=request.GET.get("chunks")),
        "answers": citing_answers(
            organization=request.organization,
            document_id=document_id,
            user=request.user,
            everyone=role_allows(request.role, Action.AUDIT),
        ),
        "deleted": all(r.deleted_at is not None for r in revisions),
        "may_edit": role_allows(request.role, Action.EDIT_DOCUMENTS),
        "busy": any(r.status in IN_PROGRESS_STATUSES for r in revisions),
    }
    return render(request, "web/document.html", context)


@member_required(Action.READ_DOCUMENTS)
@require_GET
def download(request: MemberRequest, file_id: str) -> HttpResponse | StreamingHttpResponse:
    """One revision's original bytes; the download is recorded in the document's ledger."""
    record = selectors.file_get(organization=request.organization, file_id=file_id)
    caller = Caller.from_request(request)
    document_event_record(
        kind="download",
        file=record,
        user=caller.user,
        origin=caller.origin,
        user_agent=caller.user_agent,
    )
    return original_download_page(record, where="a web download")


@member_required(Action.EDIT_DOCUMENTS)
@require_http_methods(["GET", "POST"])
def delete(request: MemberRequest, document_id: str) -> HttpResponse:
    """The confirmation (GET) and the deletion (POST, with a reason): every revision
    leaves retrieval; bytes, chunks and the answers that cite them stay as evidence."""
    revisions = document_revisions(organization=request.organization, document_id=document_id)
    page = reverse("web-document", args=[document_id])
    reason = request.POST.get("reason", "").strip()
    error = ""
    if request.method == "POST":
        if not reason:
            error = "Say why the document is deleted: the reason is kept with the evidence."
        elif len(reason) > MAX_REASON_CHARS:
            error = f"The reason is kept whole: at most {MAX_REASON_CHARS} characters."
        else:
            return _delete(request, revisions[0], reason, page)
    context = {"document": revisions[0], "reason": reason, "error": error}
    return render(request, "web/document_delete.html", context, status=400 if error else 200)


def _delete(request: MemberRequest, latest: File, reason: str, page: str) -> HttpResponse:
    caller = Caller.from_request(request)
    try:
        file_delete(
            file=latest,
            reason=reason,
            user=caller.user,
            origin=caller.origin,
            user_agent=caller.user_agent,
        )
    except AlreadyDeleted:
        messages.info(request, f"{latest.name} was already deleted.")
    else:
        messages.success(
            request,
            f"{latest.name} is deleted: it no longer answers questions; its revisions, "
            "chunks and the answers that cited it are kept as evidence.",
        )
    return HttpResponseRedirect(page, status=303)
