"""The OpenAPI schema describes a download as it is served: the file's own type (one
of those uploads are sniffed as), not ``application/octet-stream``, with its
``X-Content-SHA256`` header."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from documents.sniffing import CONTENT_TYPES

pytestmark = pytest.mark.django_db


def test_the_content_endpoint_documents_each_served_type_and_the_sha256_header() -> None:
    schema = APIClient().get("/api/schema/", {"format": "json"}).json()
    ok = schema["paths"]["/v1/flow/files/{file_id}/content"]["get"]["responses"]["200"]
    served = {value.split(";")[0] for value in CONTENT_TYPES.values()}
    assert set(ok["content"]) == served
    assert "application/octet-stream" not in ok["content"]
    assert ok["content"]["application/pdf"]["schema"] == {"type": "string", "format": "binary"}
    assert ok["headers"]["X-Content-SHA256"]["schema"] == {"type": "string"}
    assert "sha256" in ok["headers"]["X-Content-SHA256"]["description"]
