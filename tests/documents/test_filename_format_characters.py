"""Invisible formatting characters in file names: refused at upload (a right-to-left
override shows "invoice\u202efdp.exe" as "invoiceexe.pdf") and never sent back in a
download's Content-Disposition, even for a name stored before the rule."""

from __future__ import annotations

import unicodedata
from urllib.parse import unquote

import pytest
from rest_framework.test import APIClient

from documents.models import File
from tests import factories
from tests.documents.test_uploads_api import _post
from tests.support.tamper import triggers_off

pytestmark = pytest.mark.django_db

HIDDEN = [
    *(chr(c) for c in range(0x202A, 0x202F)),  # embeddings and overrides
    *(chr(c) for c in range(0x2066, 0x206A)),  # isolates
    "\u200e",  # left-to-right mark
    "\u200f",  # right-to-left mark
    "\u061c",  # Arabic letter mark
    "\u200b",  # zero-width space
    "\ufeff",  # byte order mark
]


@pytest.fixture
def client() -> APIClient:
    org = factories.organization("Acme")
    factories.data_source(org, "Human Resources")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {factories.api_key(org)}")
    return api


@pytest.mark.parametrize("hidden", HIDDEN, ids=lambda ch: f"U+{ord(ch):04X}")
def test_an_upload_named_with_a_hidden_format_character_is_refused(
    client: APIClient, hidden: str
) -> None:
    response = _post(client, f"invoice{hidden}dm.txt", b"# Invoice\n")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_filename" and error["param"] == "file"
    assert f"U+{ord(hidden):04X}" in error["message"]
    assert not File.objects.exists()


def test_joiners_that_spell_words_are_kept(client: APIClient) -> None:
    """Persian writes the zero-width non-joiner inside words ("می‌خواهم")."""
    name = "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645.md"
    response = _post(client, name, b"# Notes\n")
    assert response.status_code == 202
    assert File.objects.get().name == name


def test_a_stored_name_with_an_override_is_downloaded_without_it(client: APIClient) -> None:
    record = factories.upload(
        factories.data_source(factories.organization("Acme"), "Human Resources"),
        "report.md",
        b"# Report\n",
    ).file
    with triggers_off():
        File.objects.filter(pk=record.pk).update(name="r\u00e9port\u202efdp.exe\u2066.md")
    response = client.get(f"/v1/flow/files/{record.pk}/content")
    assert response.status_code == 200
    header = response["Content-Disposition"]
    shown = unquote(header)
    assert not any(unicodedata.category(ch) == "Cf" for ch in shown), header
    assert "filename*=UTF-8''r%C3%A9portfdp.exe.md" in header
