"""How the OpenAPI schema describes our API-key authentication: the three
headers ``ApiKeyAuthentication`` accepts, each as its own security scheme."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "core.authentication.ApiKeyAuthentication"
    name = ["bearerAuth", "apiKeyHeader", "wikitApiKeyHeader"]

    def get_security_requirement(self, auto_schema: AutoSchema) -> list[dict]:
        """Any one of the headers will do: alternatives, not all three at once."""
        return [{name: []} for name in self.name]

    def get_security_definition(self, auto_schema: AutoSchema) -> list[dict]:
        organization = (
            " An `X-Wikit-Organization-Id` or `X-Organization-Id` header, when sent, "
            "must name the key's organization."
        )
        return [
            {
                "type": "http",
                "scheme": "bearer",
                "description": "`Authorization: Bearer <api key>`." + organization,
            },
            {
                "type": "apiKey",
                "in": "header",
                "name": "X-API-Key",
                "description": "The API key in a header of its own." + organization,
            },
            {
                "type": "apiKey",
                "in": "header",
                "name": "Wikit-Semantics-API-Key",
                "description": "The source-citation document's header." + organization,
            },
        ]
