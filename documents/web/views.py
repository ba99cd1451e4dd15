"""Library pages: the organization's files with their ingestion progress, search
and filters, multi-file upload (a plain form, and one file per request with
JavaScript, for its progress bar), and retry of failed files. Thin: parse, call a
service, redirect (POST → 303 → GET, so a reload never uploads twice)."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.contrib import messages
from django.core.files.uploadedfile import UploadedFile
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST

from core.caller import Caller
from core.roles import Action, role_allows
from documents import selectors
from documents.ingestion.requeue import file_retry, retry_can_help
from documents.models import DataSource, File, FileStatus
from documents.uploads import UploadRejected, data_source_for, file_upload
from documents.web.access import MemberRequest, member_required
from documents.web.selectors import (
    DELETED,
    LibraryFilters,
    data_sources_of,
    kinds_of,
    library_busy,
    library_page,
)


def _back(request: HttpRequest) -> HttpResponseRedirect:
    """To the page the form was on (``next``, a path of this site), else the library."""
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = reverse("web-library")
    return HttpResponseRedirect(target, status=303)


@member_required(Action.READ_DOCUMENTS, post=Action.EDIT_DOCUMENTS)
@require_http_methods(["GET", "POST"])
def library(request: MemberRequest) -> HttpResponse:
    """The file list (GET) and the upload form's target (POST)."""
    if request.method == "POST":
        return _upload(request)
    organization = request.organization
    filters = LibraryFilters.from_query(request.GET)
    page = library_page(organization=organization, number=request.GET.get("page"), filters=filters)
    context = {
        "page": page,
        "filters": filters,
        "pager_query": filters.query,
        "statuses": [*FileStatus.values, DELETED],
        "kinds": kinds_of(organization=organization),
        "data_sources": data_sources_of(organization=organization),
        "busy": library_busy(organization=organization, shown=page),
        "max_upload_bytes": settings.PROVENANCE_MAX_UPLOAD_BYTES,
        "may_edit": role_allows(request.role, Action.EDIT_DOCUMENTS),
    }
    return render(request, "web/library.html", context)


@dataclass(frozen=True)
class Outcome:
    """What became of one uploaded file, for the page's messages or the upload list."""

    name: str
    result: str  # "uploaded" | "duplicate" | "refused"
    message: str
    file: File | None = None
    status: int = 201


def _upload_one(request: MemberRequest, source: DataSource, upload: UploadedFile) -> Outcome:
    """Store one file as the signed-in member, recording where the request came from."""
    name, caller = upload.name or "", Caller.from_request(request)
    try:
        result = file_upload(
            data_source=source,
            name=name,
            stream=upload,
            uploaded_by=request.user,
            origin=caller.origin,
            user_agent=caller.user_agent,
        )
    except UploadRejected as exc:
        return Outcome(
            name, "refused", f"{name} was not uploaded: {exc.message}.", None, exc.status
        )
    record = result.file
    if result.duplicate:
        text = f"{record.name} is identical to revision {record.revision}: nothing new to ingest."
        return Outcome(record.name, "duplicate", text, record, 200)
    text = f"{record.name} uploaded as revision {record.revision}; ingestion has started."
    return Outcome(record.name, "uploaded", text, record)


def _upload(request: MemberRequest) -> HttpResponse:
    uploads = request.FILES.getlist("files")
    if not uploads:
        messages.error(request, "Choose at least one file to upload.")
        return _back(request)
    try:
        source = data_source_for(
            organization=request.organization, name=request.POST.get("data_source", "")
        )
    except UploadRejected as exc:
        messages.error(request, f"Nothing was uploaded: {exc.message}.")
        return _back(request)
    levels = {"uploaded": messages.SUCCESS, "duplicate": messages.INFO, "refused": messages.ERROR}
    for upload in uploads:
        outcome = _upload_one(request, source, upload)
        messages.add_message(request, levels[outcome.result], outcome.message)
    return _back(request)


@member_required(Action.EDIT_DOCUMENTS)
@require_POST
def upload_one(request: MemberRequest) -> JsonResponse:
    """One file (``file``) into ``data_source``, answered in JSON: the library's drop
    zone sends each file on its own request, so each has its own progress bar."""
    upload = request.FILES.get("file")
    if upload is None:
        return JsonResponse({"result": "refused", "message": "No file was sent."}, status=400)
    try:
        source = data_source_for(
            organization=request.organization, name=request.POST.get("data_source", "")
        )
    except UploadRejected as exc:
        message = f"{upload.name} was not uploaded: {exc.message}."
        return JsonResponse(
            {"name": upload.name, "result": "refused", "message": message}, status=400
        )
    outcome = _upload_one(request, source, upload)
    body: dict[str, object] = {
        "name": outcome.name,
        "result": outcome.result,
        "message": outcome.message,
    }
    if outcome.file is not None:
        body["revision"] = outcome.file.revision
        body["url"] = reverse("web-document", args=[outcome.file.document_id])
    return JsonResponse(body, status=outcome.status)


@member_required(Action.EDIT_DOCUMENTS)
@require_POST
def retry(request: MemberRequest, file_id: str) -> HttpResponse:
    """Run a failed file's ingestion again; other states are left alone."""
    record = selectors.file_get(organization=request.organization, file_id=file_id)
    if record.status != FileStatus.FAILED:
        messages.info(request, f"{record.name} has not failed: nothing to retry.")
        return _back(request)
    if not retry_can_help(record):
        messages.error(
            request,
            f"Retrying {record.name} cannot help: {record.refused_by} refuses these bytes "
            f"({record.error_message}). Upload a corrected file.",
        )
        return _back(request)
    caller = Caller.from_request(request)
    file_retry(file=record, user=caller.user, origin=caller.origin, user_agent=caller.user_agent)
    messages.success(request, f"{record.name} (revision {record.revision}) is queued again.")
    return _back(request)
