"""Library pages: the organization's files with their ingestion progress,
multi-file upload, and retry of failed files. Thin: parse, call a service,
redirect (POST → 303 → GET, so a reload never uploads twice)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from documents import selectors
from documents.ingestion import file_retry, retry_can_help
from documents.models import FileStatus
from documents.uploads import UploadRejected, data_source_for, file_upload
from documents.web.access import MemberRequest, member_required
from documents.web.selectors import data_sources_of, library_busy, library_page


def _back_to_library() -> HttpResponseRedirect:
    return HttpResponseRedirect(reverse("web-library"), status=303)


@member_required
@require_http_methods(["GET", "POST"])
def library(request: MemberRequest) -> HttpResponse:
    """The file list (GET) and the upload form's target (POST)."""
    if request.method == "POST":
        return _upload(request)
    organization = request.organization
    context = {
        "page": library_page(organization=organization, number=request.GET.get("page")),
        "data_sources": data_sources_of(organization=organization),
        "busy": library_busy(organization=organization),
        "max_upload_bytes": settings.PROVENANCE_MAX_UPLOAD_BYTES,
    }
    return render(request, "web/library.html", context)


def _upload(request: MemberRequest) -> HttpResponse:
    uploads = request.FILES.getlist("files")
    if not uploads:
        messages.error(request, "Choose at least one file to upload.")
        return _back_to_library()
    try:
        source = data_source_for(
            organization=request.organization, name=request.POST.get("data_source", "")
        )
    except UploadRejected as exc:
        messages.error(request, f"Nothing was uploaded: {exc.message}.")
        return _back_to_library()
    for upload in uploads:
        try:
            result = file_upload(
                data_source=source, name=upload.name or "", stream=upload, uploaded_by=request.user
            )
        except UploadRejected as exc:
            messages.error(request, f"{upload.name} was not uploaded: {exc.message}.")
            continue
        if result.duplicate:
            messages.info(
                request,
                f"{result.file.name} is identical to revision {result.file.revision}: "
                "nothing new to ingest.",
            )
        else:
            messages.success(
                request,
                f"{result.file.name} uploaded as revision {result.file.revision}; "
                "ingestion has started.",
            )
    return _back_to_library()


@member_required
@require_POST
def retry(request: MemberRequest, file_id: str) -> HttpResponse:
    """Run a failed file's ingestion again; other states are left alone."""
    record = selectors.file_get(organization=request.organization, file_id=file_id)
    if record.status != FileStatus.FAILED:
        messages.info(request, f"{record.name} has not failed: nothing to retry.")
        return _back_to_library()
    if not retry_can_help(record):
        messages.error(
            request,
            f"Retrying {record.name} cannot help: {record.refused_by} refuses these bytes "
            f"({record.error_message}). Upload a corrected file.",
        )
        return _back_to_library()
    file_retry(file=record)
    messages.success(request, f"{record.name} (revision {record.revision}) is queued again.")
    return _back_to_library()
