"""JSON fields that are strict about their types, and the shape of a list.

``"5"`` is not a number and ``1`` is not a boolean: a client's mistake is a 400
naming the field rather than a guess (DRF's own fields coerce both).
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer and nothing else (DRF's takes ``"5"`` and ``true``)."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    """A JSON number and nothing else."""

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """``true`` or ``false`` and nothing else."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


def list_of(
    item: type[serializers.Serializer], name: str, *, paged: bool = False
) -> type[serializers.Serializer]:
    """The shape of a list of ``item``s; a ``paged`` one has OpenAI's cursor fields."""
    fields: dict[str, Any] = {
        "object": serializers.CharField(help_text='"list"'),
        "data": item(many=True),
        "__doc__": f"A list of {item.__name__}s.",
    }
    if paged:
        fields |= {
            "first_id": serializers.CharField(allow_null=True),
            "last_id": serializers.CharField(allow_null=True),
            "has_more": serializers.BooleanField(),
        }
    return type(name, (serializers.Serializer,), fields)
