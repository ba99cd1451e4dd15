"""Django's own error answers with DEBUG off: the documented JSON error shape on API
paths (``/v1/``, ``/semantics/``, ``/api/``), a plain page on the web pages."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from django.test import Client
from pytest_django import Settings

from tests import factories

if TYPE_CHECKING:
    from django.test.client import _MonkeyPatchedWSGIResponse


pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.site.raising_urls")]

BOUNDARY = "----provenance-test-boundary"


@pytest.fixture(autouse=True)
def _debug_off(settings: Settings) -> None:
    settings.DEBUG = False


def _error(response: _MonkeyPatchedWSGIResponse, status: int, code: str) -> dict:
    assert response.status_code == status
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["code"] == code
    return body["error"]


def _page(response: _MonkeyPatchedWSGIResponse, status: int, title: str) -> str:
    assert response.status_code == status
    assert response["Content-Type"].startswith("text/html")
    text = response.content.decode()
    assert f"<h1>{title}</h1>" in text
    assert "Traceback" not in text and "django" not in text.lower()
    return text


def _multipart(fields: dict[str, str]) -> bytes:
    parts = [
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
        for name, value in fields.items()
    ]
    return ("".join(parts) + f"--{BOUNDARY}--\r\n").encode()


def _keyed() -> Client:
    org = factories.organization("Acme")
    factories.data_source(org, "Handbook")
    return Client(HTTP_AUTHORIZATION=f"Bearer {factories.api_key(org)}")


def test_an_unknown_api_path_answers_404_in_the_error_shape() -> None:
    for path in ("/v1/nope", "/semantics/nope", "/api/nope", "/v1/flow/files/a/b/c"):
        error = _error(Client().get(path), 404, "not_found")
        assert error["type"] == "not_found_error"


def test_an_unknown_web_page_answers_a_plain_404_page() -> None:
    text = _page(Client().get("/no-such-page/"), 404, "Page not found")
    assert "/no-such-page/" not in text  # no URL list, no debug page


def test_an_exception_answers_500_in_the_error_shape_or_a_plain_page() -> None:
    client = Client(raise_request_exception=False)
    error = _error(client.get("/v1/test-fail"), 500, "internal_error")
    assert error["type"] == "api_error" and "a bug" not in error["message"]
    text = _page(client.get("/test-fail"), 500, "Something went wrong")
    assert "a bug" not in text


def test_a_form_field_past_the_memory_limit_answers_413(settings: Settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = _multipart({"data_source": "x" * 5000})
    upload = _keyed().post(
        "/v1/flow/files", body, content_type=f"multipart/form-data; boundary={BOUNDARY}"
    )
    _error(upload, 413, "request_too_large")
    login = Client().post("/accounts/login/", {"username": "a" * 5000, "password": "b"})
    _page(login, 413, "Request too large")


def test_too_many_form_fields_answer_400_too_many_fields(settings: Settings) -> None:
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 10
    body = _multipart({f"field{i}": "x" for i in range(50)})
    upload = _keyed().post(
        "/v1/flow/files", body, content_type=f"multipart/form-data; boundary={BOUNDARY}"
    )
    _error(upload, 400, "too_many_fields")
    login = Client().post("/accounts/login/", {f"f{i}": "x" for i in range(50)})
    _page(login, 400, "Bad request")


def test_a_refused_csrf_token_answers_a_plain_403_page() -> None:
    client = Client(enforce_csrf_checks=True)
    _page(client.post("/accounts/login/", {"username": "a"}), 403, "Forbidden")
