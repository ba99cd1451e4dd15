"""`make run` may start any number of times: the demo's login, key, documents and
app are made once and shown again."""

from __future__ import annotations

import re
import stat
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from pytest_django import Settings

from citations.models import App
from core.api_keys import api_key_verify
from documents.models import File

pytestmark = pytest.mark.django_db


def _found(pattern: str, text: str) -> str:
    match = re.search(pattern, text)
    assert match is not None, (pattern, text)
    return match.group(1)


def _start(settings: Settings, tmp_path: Path) -> str:
    settings.VAR_DIR = tmp_path
    out = StringIO()
    call_command("setup_demo", "--port", "8123", stdout=out)
    return out.getvalue()


def test_a_second_start_adds_no_revision_and_keeps_the_login_and_key(
    settings: Settings, tmp_path: Path
) -> None:
    first = _start(settings, tmp_path)
    files = set(File.objects.values_list("pk", "revision"))
    assert files  # the demo documents were uploaded
    second = _start(settings, tmp_path)

    assert set(File.objects.values_list("pk", "revision")) == files
    assert App.objects.filter(name="Handbook").count() == 1
    key = _found(r"API key:\s+(\S+)", first)
    assert _found(r"API key:\s+(\S+)", second) == key
    assert api_key_verify(presented=key) is not None
    password = _found(r"password '([^']+)'", first)
    assert _found(r"password '([^']+)'", second) == password
    for name in ("demo-api-key", "demo-admin-password"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600


def test_a_revoked_demo_key_is_replaced(settings: Settings, tmp_path: Path) -> None:
    from django.utils import timezone

    from documents.models import ApiKey

    key = _found(r"API key:\s+(\S+)", _start(settings, tmp_path))
    ApiKey.objects.update(revoked_at=timezone.now())
    fresh = _found(r"API key:\s+(\S+)", _start(settings, tmp_path))
    assert fresh != key and api_key_verify(presented=fresh) is not None
    assert (tmp_path / "demo-api-key").read_text().strip() == fresh
