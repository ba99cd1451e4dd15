"""Production hardening: Django's deployment check passes under the production
settings, and every HTML page carries a Content-Security-Policy whose nonce is
the one its inline script and style elements carry."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.http import HttpResponseBase
from django.test import Client

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def _deploy_check(**overrides: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "provenance_site.settings.production",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "PROVENANCE_AUDIT_KEY": secrets.token_hex(32),
        "PROVENANCE_DB_NAME": settings.EMBEDDED_DATABASE_NAME,
        **overrides,
    }
    command = [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"]
    return subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_the_deploy_check_passes_under_the_production_settings() -> None:
    result = _deploy_check()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_the_deploy_check_fails_when_https_is_switched_off() -> None:
    """The check is real: without the SSL redirect and HSTS it names both."""
    result = _deploy_check(DJANGO_SSL_REDIRECT="0", DJANGO_HSTS_SECONDS="0")
    assert result.returncode != 0
    assert "security.W004" in result.stderr and "security.W008" in result.stderr


def test_a_tls_terminating_proxy_is_trusted_only_when_configured() -> None:
    proxied = _deploy_check(DJANGO_SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO,https")
    assert proxied.returncode == 0, proxied.stderr
    bad = _deploy_check(DJANGO_SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO")
    assert bad.returncode != 0 and "HEADER,value" in bad.stderr


def _policy(response: HttpResponseBase) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {d.split()[0]: d.split()[1:] for d in header.split("; ")}


def test_every_html_page_has_a_policy_with_a_fresh_nonce_its_inline_elements_carry() -> None:
    client = Client()
    first, second = client.get("/accounts/login/"), client.get("/accounts/login/")
    policy = _policy(first)
    nonce = next(s for s in policy["script-src"] if s.startswith("'nonce-"))[7:-1]
    assert nonce != _policy(second)["script-src"][1][7:-1]
    assert policy["object-src"] == ["'none'"] and policy["frame-ancestors"] == ["'none'"]
    assert "'unsafe-inline'" not in policy["script-src"] + policy["style-src-elem"]
    page = first.content.decode()
    inline = re.findall(r"<(script|style)(?![^>]*\bsrc=)([^>]*)>", page)
    assert inline
    assert all(f'nonce="{nonce}"' in attributes for _, attributes in inline), inline
    for path in ("/no-such-page/", "/admin/login/"):
        assert "Content-Security-Policy" in client.get(path)
    assert "Content-Security-Policy" not in client.get("/api/schema/")  # not HTML


def test_no_template_has_an_inline_script_or_style_without_the_nonce() -> None:
    """A strict policy blocks an inline element without it: a new template would break."""
    templates = sorted((ROOT / "templates").rglob("*.html"))
    assert templates, f"no template under {ROOT / 'templates'}"
    missing = [
        f"{template.relative_to(ROOT)}: {tag.group()}"
        for template in templates
        for tag in re.finditer(r"<(script|style)\b[^>]*>", template.read_text())
        if "nonce=" not in tag.group() and "src=" not in tag.group()
    ]
    assert missing == []


def test_the_api_docs_run_no_inline_script() -> None:
    docs = Client().get("/api/docs/")
    page = docs.content.decode()
    assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", page) == []
    assert "https://cdn.jsdelivr.net" in _policy(docs)["script-src"]
