"""The OpenAPI generator: drf-spectacular's, plus the body of a DELETE that declares one.

drf-spectacular drops every DELETE body, yet deleting a document needs a
``reason``; without its body in the schema, a generated client could not send it.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema


class ProvenanceAutoSchema(AutoSchema):
    def _get_request_body(self, direction: str = "request") -> Any:
        """For a DELETE whose ``extend_schema(request=...)`` names a body, describe that
        body as for a POST; every other operation as drf-spectacular does."""
        if self.method != "DELETE" or self.get_request_serializer() is None:
            return super()._get_request_body(direction)
        self.method = "POST"
        try:
            return super()._get_request_body(direction)
        finally:
            self.method = "DELETE"
