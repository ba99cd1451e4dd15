"""``/v1/flow/api-keys``: keys made with a role (the secret shown once), listed
and revoked."""

from __future__ import annotations

from typing import ClassVar

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import api_keys
from core.api_shapes import EXAMPLE_CREATED, json_object
from core.errors import error_responses
from core.roles import Action
from core.tenancy import member_organization, role_of
from documents.api.management.serializers import (
    ApiKeyCreatedOutput,
    ApiKeyCreateInput,
    ApiKeyList,
    ApiKeyOutput,
    api_key_output,
)

_KEY_EXAMPLE = {
    "id": 7,
    "object": "api_key",
    "prefix": "3f9a1c2b7d4e",
    "name": "ingestion robot",
    "role": "editor",
    "created_at": EXAMPLE_CREATED,
    "last_used_at": None,
    "revoked_at": None,
}


class ApiKeysView(APIView):
    """The organization's API keys (never their secrets), and making one."""

    role_actions: ClassVar[dict[str, Action]] = {
        "GET": Action.MANAGE_MEMBERS,
        "POST": Action.MANAGE_MEMBERS,
    }

    @extend_schema(
        operation_id="v1_flow_api_keys_list",
        responses={200: ApiKeyList, **error_responses()},
        examples=[OpenApiExample("keys", value={"object": "list", "data": [_KEY_EXAMPLE]})],
    )
    def get(self, request: Request) -> Response:
        keys = api_keys.api_keys_of(organization=member_organization(request))
        return Response({"object": "list", "data": [api_key_output(key) for key in keys]})

    @extend_schema(
        operation_id="v1_flow_api_keys_create",
        request=ApiKeyCreateInput,
        responses={201: ApiKeyCreatedOutput, **error_responses(400, 415)},
        examples=[
            OpenApiExample(
                "create", value={"role": "editor", "name": "ingestion robot"}, request_only=True
            ),
            OpenApiExample(
                "created",
                value=_KEY_EXAMPLE | {"key": "pvk_3f9a1c2b7d4e_…"},
                response_only=True,
            ),
        ],
    )
    def post(self, request: Request) -> Response:
        """The answer holds the secret ``key``: it is shown here once and never again.
        A caller may give no role above its own (403 ``role_above_own``)."""
        form = ApiKeyCreateInput(data=json_object(request))
        form.is_valid(raise_exception=True)
        key, secret = api_keys.api_key_create(
            organization=member_organization(request),
            role=form.validated_data["role"],
            name=form.validated_data.get("name", ""),
            granted_by=role_of(request),
        )
        body = api_key_output(key) | {"key": secret}
        return Response(body, status=status.HTTP_201_CREATED)


class ApiKeyRevokeView(APIView):
    """Revoke a key for good: it answers 401 from then on; its row stays, so what it
    did is still attributed to it."""

    role_actions: ClassVar[dict[str, Action]] = {"POST": Action.MANAGE_MEMBERS}

    @extend_schema(
        operation_id="v1_flow_api_keys_revoke",
        request=None,
        responses={200: ApiKeyOutput, **error_responses(404, 409)},
        examples=[
            OpenApiExample("revoked", value=_KEY_EXAMPLE | {"revoked_at": "2026-11-28T10:00:00Z"})
        ],
    )
    def post(self, request: Request, key_id: str) -> Response:
        key = api_keys.api_key_get(organization=member_organization(request), key_id=key_id)
        return Response(api_key_output(api_keys.api_key_revoke(key=key)))
