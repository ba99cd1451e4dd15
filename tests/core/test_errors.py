"""Domain refusals answer in the one error shape, mapped once by the handler."""

from __future__ import annotations

from core.errors import json_exception_handler
from core.exceptions import DomainRejected
from documents.uploads import UploadRejected


def test_a_domain_refusal_answers_with_its_status_code_and_param() -> None:
    refused = DomainRejected("too big", code="file_too_large", status=413, param="file")

    response = json_exception_handler(refused, {})

    assert response is not None and response.status_code == 413
    assert response.data == {
        "error": {
            "message": "too big",
            "type": "invalid_request_error",
            "param": "file",
            "code": "file_too_large",
        }
    }


def test_a_refusal_names_its_kinds_field_unless_it_names_another() -> None:
    assert UploadRejected("no name", code="invalid_filename").param == "file"
    assert UploadRejected("who?", code="x", param="data_source").param == "data_source"
    assert DomainRejected("no", code="x").param is None
