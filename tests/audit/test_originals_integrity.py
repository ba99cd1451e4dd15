"""Originals verified as they are served (issue 57, finding 2: after a same-length edit
of a stored original, the download answered 200 with the recorded hash in
``X-Content-SHA256`` over other bytes, and ``verify_audit_trail`` passed)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.storage import storages
from django.core.management import CommandError, call_command
from django.test import Client, override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from audit.ledger import ledger_verify
from audit.models import DocumentEvent, EvidenceEntry, OriginalsCheck
from core.api_keys import api_key_create
from documents.models import File, OrganizationMember
from documents.originals import OriginalAltered, originals_check_due, originals_verify
from tests.audit.conftest import HANDBOOK, Trail

pytestmark = pytest.mark.django_db


def _stored(record: File) -> Path:
    return Path(storages["originals"].path(record.storage_key))


@pytest.fixture
def altered(trail: Trail) -> Iterator[File]:
    """The handbook's stored bytes edited in place, same length (the probe's edit);
    put back afterwards for the package's other tests."""
    path = _stored(trail.handbook)
    original = path.read_bytes()
    assert original == HANDBOOK
    path.write_bytes(original.replace(b"seven years", b"eight years"))
    try:
        yield trail.handbook
    finally:
        path.write_bytes(original)


def _rest(trail: Trail) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_create(organization=trail.acme)[1]}")
    return client


def _streamed(response: object) -> Iterator[bytes]:
    """The body of a streamed response, block by block (as a WSGI server reads it)."""
    return iter(response.streaming_content)  # type: ignore[attr-defined]


def _integrity_events(record: File) -> list[str]:
    return list(
        DocumentEvent.objects.filter(file=record, kind="integrity").values_list("reason", flat=True)
    )


def test_an_intact_original_downloads_whole_with_its_hash(trail: Trail) -> None:
    response = _rest(trail).get(f"/v1/flow/files/{trail.handbook.pk}/content")
    assert response.status_code == 200
    body = b"".join(_streamed(response))
    assert body == HANDBOOK
    assert response["X-Content-SHA256"] == hashlib.sha256(body).hexdigest()
    assert response["Content-Length"] == str(len(HANDBOOK))
    assert not _integrity_events(trail.handbook)


def test_an_altered_original_is_refused_before_a_byte_is_sent(altered: File, trail: Trail) -> None:
    response = _rest(trail).get(f"/v1/flow/files/{altered.pk}/content")
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "original_altered"
    assert altered.sha256 in error["message"]
    [reason] = _integrity_events(altered)
    assert reason.startswith("a REST download:") and "altered where it is stored" in reason
    assert ledger_verify().ok  # the incident is itself chained evidence


def test_the_web_and_admin_downloads_refuse_it_too(altered: File, trail: Trail) -> None:
    from django.contrib.auth.models import User

    user = User.objects.create_user("officer-57", password="x", is_staff=True)
    OrganizationMember.objects.create(organization=trail.acme, user=user, role="admin")
    client = Client()
    client.force_login(user)
    web = client.get(f"/library/files/{altered.pk}/download")
    admin = client.get(f"/admin/documents/file/{altered.pk}/download/")
    assert (web.status_code, admin.status_code) == (409, 409)
    assert b"altered where it is stored" in web.content
    assert len(_integrity_events(altered)) == 2


@override_settings(PROVENANCE_VERIFY_BEFORE_SEND_BYTES=0)  # as for an original of any size
def test_a_large_altered_original_streams_short_of_its_length(altered: File, trail: Trail) -> None:
    response = _rest(trail).get(f"/v1/flow/files/{altered.pk}/content")
    assert response.status_code == 200 and response.streaming
    received = b""
    with pytest.raises(OriginalAltered):
        for block in _streamed(response):
            received += block
    # the last block (here the only one) is held back until the hash is known
    assert len(received) < int(response["Content-Length"])
    assert b"eight years" not in received
    assert len(_integrity_events(altered)) == 1


@override_settings(PROVENANCE_VERIFY_BEFORE_SEND_BYTES=0)
def test_a_large_intact_original_streams_whole(trail: Trail) -> None:
    response = _rest(trail).get(f"/v1/flow/files/{trail.handbook.pk}/content")
    assert b"".join(_streamed(response)) == HANDBOOK


def test_the_sweep_records_its_result_and_names_an_altered_original(
    altered: File, trail: Trail
) -> None:
    with pytest.raises(CommandError, match=rf"originals FAILED: 1 of \d+ .*file {altered.pk}"):
        call_command("verify_originals")
    check = OriginalsCheck.objects.get()
    assert check.checked == File.objects.count() >= 2
    assert check.altered == [
        {
            "file": str(altered.pk),
            "recorded": altered.sha256,
            "actual": hashlib.sha256(_stored(altered).read_bytes()).hexdigest(),
        }
    ]
    assert EvidenceEntry.objects.filter(
        record_table="audit_originalscheck", record_id=str(check.pk)
    ).exists()
    assert [r.startswith("the originals sweep:") for r in _integrity_events(altered)] == [True]
    assert ledger_verify().ok


def test_the_sweep_passes_intact_originals_and_names_a_vanished_one(trail: Trail) -> None:
    out = call_command("verify_originals")
    assert out is None and OriginalsCheck.objects.get().altered == []
    path = _stored(trail.handbook)
    kept = path.read_bytes()
    path.unlink()
    try:
        with pytest.raises(CommandError, match=f"file {trail.handbook.pk}: unreadable"):
            call_command("verify_originals", "--file", str(trail.handbook.pk))
    finally:
        path.write_bytes(kept)


def test_a_sweep_is_due_once_its_period_has_passed(trail: Trail) -> None:
    assert originals_check_due()
    now = timezone.now()
    originals_verify(File.objects.filter(pk=trail.handbook.pk), clock=lambda: now)
    assert not originals_check_due(clock=lambda: now + timedelta(hours=23))
    assert originals_check_due(clock=lambda: now + timedelta(days=1))
