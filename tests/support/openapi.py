"""Checks a real response against the OpenAPI schema strictly: ``nullable``
becomes a null alternative, and an object with declared properties admits no
others, so an undocumented field fails as surely as a missing one."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from drf_spectacular.generators import SchemaGenerator


def generated_schema() -> dict[str, Any]:
    generated = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(json.dumps(generated, default=str))


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _strict(value) for key, value in node.items()}
    if "properties" in node and "additionalProperties" not in node:
        node["additionalProperties"] = False
    if node.pop("nullable", False):
        return {"anyOf": [node, {"type": "null"}]}
    return node


def assert_documented(schema: dict, status: int, body: Any, path: str, method: str) -> None:
    """``body`` matches what ``schema`` documents for ``status`` of the operation."""
    operation = schema["paths"][path][method]
    documented = operation["responses"].get(str(status))
    assert documented, f"{method.upper()} {path} does not document {status}"
    body_schema = documented["content"]["application/json"]["schema"]
    root = _strict({"components": schema["components"], **body_schema})
    jsonschema.validate(body, root, format_checker=jsonschema.FormatChecker())
