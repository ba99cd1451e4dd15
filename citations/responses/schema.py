"""The OpenAPI description of ``/v1/responses``: OpenAI's Responses shapes as
``output.py`` builds them (the view checks bodies itself, with OpenAI's error
codes and ``param`` paths; these serializers only describe)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema_field
from rest_framework import serializers

from citations.models import ResponseStatus
from citations.responses.services import INCLUDE_RESULTS

_UNIX = "Unix time in seconds"

RESPONSE_EVENTS = OpenApiResponse(
    OpenApiTypes.STR,
    description="With `stream: true`: server-sent events named as OpenAI's, each `data` a JSON "
    "object with `type` and `sequence_number`: `response.created`, `response.in_progress`, "
    "`response.output_item.added`, `response.file_search_call.in_progress`, "
    "`response.file_search_call.searching`, `response.file_search_call.completed`, "
    "`response.output_item.done`, `response.content_part.added`, `response.output_text.delta`, "
    "`response.output_text.annotation.added`, `response.output_text.done`, "
    "`response.content_part.done`, then `response.completed` (or `response.failed`).",
)

_TEXT_PART = {
    "type": "object",
    "properties": {
        "type": {"type": "string", "enum": ["input_text", "output_text", "text"]},
        "text": {"type": "string"},
    },
    "required": ["type", "text"],
}
_INPUT_MESSAGE = {
    "type": "object",
    "properties": {
        "type": {"type": "string", "enum": ["message"]},
        "role": {"type": "string", "enum": ["user", "assistant", "system", "developer"]},
        "content": {"oneOf": [{"type": "string"}, {"type": "array", "items": _TEXT_PART}]},
    },
    "required": ["role", "content"],
}


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string"},
            {"type": "array", "items": _INPUT_MESSAGE, "minItems": 1, "maxItems": 32},
        ],
        "description": "The question, or messages whose last one is the user's question "
        "(earlier user turns join the search; system and developer messages the instructions).",
    },
    component_name="ResponseInput",
)
class ResponseInputField(serializers.JSONField):
    """A string or a list of input messages."""


def _constant(value: str) -> serializers.CharField:
    return serializers.CharField(help_text=f"Always `{value}`.")


class ResponseFileSearchTool(serializers.Serializer):
    type = _constant("file_search")
    vector_store_ids = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Vector stores (`database_id`) the app searches; default: all of them. "
        "Another organization's is not found (404).",
    )


class ResponseCreateInput(serializers.Serializer):
    model = serializers.CharField(help_text="An app (`llm_app_id`) the caller may use.")
    input = ResponseInputField()
    instructions = serializers.CharField(required=False, allow_null=True)
    tools = ResponseFileSearchTool(many=True, required=False)
    include = serializers.ListField(
        child=serializers.ChoiceField(choices=[INCLUDE_RESULTS]), required=False
    )
    previous_response_id = serializers.CharField(
        required=False, allow_null=True, help_text="A response of the caller's organization."
    )
    metadata = serializers.DictField(
        child=serializers.CharField(max_length=512), required=False, allow_null=True
    )
    stream = serializers.BooleanField(required=False, help_text="true: answer `text/event-stream`.")


class ResponseFileCitation(serializers.Serializer):
    type = _constant("file_citation")
    file_id = serializers.UUIDField()
    filename = serializers.CharField()
    index = serializers.IntegerField(help_text="Where the `[n]` marker starts in the text.")
    text = serializers.CharField(help_text="The marker, `[n]`.")
    chunk_id = serializers.UUIDField()
    vector_store_id = serializers.UUIDField(help_text="The chunk's `database_id`.")
    quote = serializers.CharField(help_text="The source sentence, exactly as in the chunk.")


class ResponseOutputText(serializers.Serializer):
    type = _constant("output_text")
    text = serializers.CharField(allow_blank=True)
    annotations = ResponseFileCitation(many=True)
    logprobs = serializers.ListField(child=serializers.FloatField(), help_text="Always empty.")


class ResponseFileSearchAttributes(serializers.Serializer):
    chunk_id = serializers.UUIDField()
    vector_store_id = serializers.UUIDField()
    file_revision = serializers.IntegerField()
    section = serializers.CharField(allow_blank=True)
    line_start = serializers.IntegerField()
    line_end = serializers.IntegerField()
    page = serializers.IntegerField(required=False, help_text="PDF only.")
    chunk_url = serializers.URLField()


class ResponseFileSearchResult(serializers.Serializer):
    file_id = serializers.UUIDField()
    filename = serializers.CharField()
    score = serializers.FloatField(help_text="score_norm, 0..1")
    text = serializers.CharField(help_text="The chunk's text.")
    attributes = ResponseFileSearchAttributes()


class ResponseOutputItem(serializers.Serializer):
    id = serializers.CharField()
    type = serializers.CharField(help_text="`file_search_call` or `message`.")
    status = serializers.CharField(help_text="`in_progress`, `completed` or `failed`.")
    queries = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="For `file_search_call`."
    )
    results = ResponseFileSearchResult(
        many=True,
        required=False,
        allow_null=True,
        help_text=f"For `file_search_call`; null unless `include` names `{INCLUDE_RESULTS}`.",
    )
    role = serializers.CharField(required=False, help_text="For `message`: `assistant`.")
    content = ResponseOutputText(many=True, required=False, help_text="For `message`.")


class ResponseError(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()


class ResponseUsageInputDetails(serializers.Serializer):
    cached_tokens = serializers.IntegerField()


class ResponseUsageOutputDetails(serializers.Serializer):
    reasoning_tokens = serializers.IntegerField()


class ResponseUsage(serializers.Serializer):
    input_tokens = serializers.IntegerField()
    input_tokens_details = ResponseUsageInputDetails()
    output_tokens = serializers.IntegerField()
    output_tokens_details = ResponseUsageOutputDetails()
    total_tokens = serializers.IntegerField()


class ResponseTextFormat(serializers.Serializer):
    type = _constant("text")


class ResponseTextConfig(serializers.Serializer):
    format = ResponseTextFormat()


class ResponseObject(serializers.Serializer):
    id = serializers.UUIDField()
    object = _constant("response")
    created_at = serializers.IntegerField(help_text=_UNIX)
    status = serializers.CharField(help_text=" or ".join(f"`{v}`" for v in ResponseStatus.values))
    completed_at = serializers.IntegerField(allow_null=True, help_text=_UNIX)
    error = ResponseError(allow_null=True)
    incomplete_details = serializers.DictField(allow_null=True, help_text="Always null.")
    instructions = serializers.CharField(allow_null=True)
    metadata = serializers.DictField(child=serializers.CharField(max_length=512))
    model = serializers.UUIDField(help_text="The app that answered.")
    output = ResponseOutputItem(many=True)
    parallel_tool_calls = serializers.BooleanField()
    previous_response_id = serializers.UUIDField(allow_null=True)
    temperature = serializers.FloatField(allow_null=True)
    top_p = serializers.FloatField(allow_null=True)
    max_output_tokens = serializers.IntegerField(allow_null=True)
    tool_choice = _constant("auto")
    tools = ResponseFileSearchTool(many=True)
    text = ResponseTextConfig()
    truncation = _constant("disabled")
    store = serializers.BooleanField(help_text="Always true: every answer is recorded.")
    background = serializers.BooleanField()
    user = serializers.CharField(allow_null=True)
    usage = ResponseUsage(allow_null=True)
    query_id = serializers.UUIDField(
        allow_null=True,
        help_text="The answer's query execution: its quoted sources are at "
        "`/semantics/apps/{llm_app_id}/query-execution-sources/{query_id}/get-quoted-sources`.",
    )
    generator = serializers.CharField(
        allow_null=True,
        help_text="The generator that wrote the answer: the app's, or extractive when its "
        "model could not give a verified answer (then fallback_reason says why).",
    )
    fallback_reason = serializers.CharField(allow_null=True, allow_blank=True)


class ResponseDeleted(serializers.Serializer):
    id = serializers.UUIDField()
    object = _constant("response")
    deleted = serializers.BooleanField()
