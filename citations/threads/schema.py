"""The OpenAPI description of the ``/v1/threads`` objects: OpenAI's Assistants
shapes as ``serializers.py`` builds them, so clients generated from our schema
know every field (the views validate bodies themselves, with OpenAI's error
codes and ``param`` paths; these serializers only describe)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema_field
from rest_framework import serializers

from citations.models import MessageRole, RunStatus

_UNIX = "Unix time in seconds"

RUN_EVENTS = OpenApiResponse(
    OpenApiTypes.STR,
    description="With `stream: true`: server-sent events named as OpenAI's (`thread.run.created`, "
    "`thread.run.queued`, `thread.run.in_progress`, `thread.message.created`, "
    "`thread.message.in_progress`, `thread.message.delta`, `thread.message.completed`, "
    "`thread.run.completed` or `thread.run.failed`), each `data` a JSON object, then "
    "`event: done` with `data: [DONE]`.",
)


def _metadata(**kwargs: Any) -> serializers.DictField:
    return serializers.DictField(
        child=serializers.CharField(max_length=512),
        help_text="At most 16 keys of at most 64 characters; string values.",
        **kwargs,
    )


def _constant(value: str) -> serializers.CharField:
    """A field that always holds ``value`` (OpenAI's ``object`` and ``type`` tags);
    a one-value enum would become a component per field name, all the same set."""
    return serializers.CharField(help_text=f"Always `{value}`.")


# one part of a message's content list, written out here: a component named by a
# "$ref" inside a field's raw schema is never generated, and the reference would dangle
_TEXT_PART = {
    "type": "object",
    "properties": {
        "type": {"type": "string", "enum": ["text"]},
        "text": {"type": "string"},
    },
    "required": ["type", "text"],
}


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string"},
            {"type": "array", "items": _TEXT_PART},
        ],
        "description": "The text, or a list of text parts joined by newlines.",
    },
    component_name="MessageContentInput",
)
class MessageContentField(serializers.JSONField):
    """A string or a list of text parts."""


class MessageCreateInput(serializers.Serializer):
    role = serializers.ChoiceField(choices=MessageRole.choices)
    content = MessageContentField()
    metadata = _metadata(required=False, allow_null=True)


class ThreadCreateInput(serializers.Serializer):
    messages = MessageCreateInput(many=True, required=False, help_text="At most 32.")
    metadata = _metadata(required=False, allow_null=True)


class RunCreateInput(serializers.Serializer):
    assistant_id = serializers.CharField(help_text="An app (`llm_app_id`) the caller may use.")
    instructions = serializers.CharField(required=False, allow_null=True)
    additional_instructions = serializers.CharField(required=False, allow_null=True)
    additional_messages = MessageCreateInput(many=True, required=False, allow_null=True)
    metadata = _metadata(required=False, allow_null=True)
    stream = serializers.BooleanField(
        required=False,
        help_text="true: answer `text/event-stream`, the run's events until it ends.",
    )


class ThreadObject(serializers.Serializer):
    id = serializers.UUIDField()
    object = _constant("thread")
    created_at = serializers.IntegerField(help_text=_UNIX)
    metadata = _metadata()
    tool_resources = serializers.DictField(help_text="Always empty.")


class DeletionInput(serializers.Serializer):
    reason = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=2000,
        help_text="Why it is deleted, recorded with who deleted it (optional: OpenAI's "
        "clients send no body).",
    )


class ThreadDeleted(serializers.Serializer):
    id = serializers.UUIDField()
    object = _constant("thread.deleted")
    deleted = serializers.BooleanField()


class MessageDeleted(serializers.Serializer):
    id = serializers.UUIDField()
    object = _constant("thread.message.deleted")
    deleted = serializers.BooleanField()


class FileCitation(serializers.Serializer):
    file_id = serializers.UUIDField()
    chunk_id = serializers.UUIDField()
    quote = serializers.CharField(help_text="The source sentence, exactly as in the chunk.")


class FileCitationAnnotation(serializers.Serializer):
    type = _constant("file_citation")
    text = serializers.CharField(help_text="The marker, `[n]`.")
    start_index = serializers.IntegerField()
    end_index = serializers.IntegerField()
    file_citation = FileCitation()


class MessageText(serializers.Serializer):
    value = serializers.CharField(allow_blank=True)
    annotations = FileCitationAnnotation(many=True)


class MessageTextContent(serializers.Serializer):
    type = _constant("text")
    text = MessageText(
        help_text="The first block is the message; an answer's second block is JSON "
        '(`"object": "source_tracing"`) with every retrieved chunk\'s location.'
    )


class MessageObject(serializers.Serializer):
    id = serializers.UUIDField()
    object = _constant("thread.message")
    created_at = serializers.IntegerField(help_text=_UNIX)
    thread_id = serializers.UUIDField()
    status = _constant("completed")
    completed_at = serializers.IntegerField(help_text=_UNIX)
    incomplete_at = serializers.IntegerField(allow_null=True)
    incomplete_details = serializers.DictField(allow_null=True)
    role = serializers.ChoiceField(choices=MessageRole.choices)
    content = MessageTextContent(many=True)
    assistant_id = serializers.UUIDField(allow_null=True)
    run_id = serializers.UUIDField(allow_null=True)
    attachments = serializers.ListField(child=serializers.DictField(), help_text="Always empty.")
    metadata = _metadata()


class RunError(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()


class RunUsage(serializers.Serializer):
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    total_tokens = serializers.IntegerField()


class RunTool(serializers.Serializer):
    type = _constant("file_search")


class TruncationStrategy(serializers.Serializer):
    type = _constant("auto")
    last_messages = serializers.IntegerField(allow_null=True)


class RunObject(serializers.Serializer):
    id = serializers.UUIDField()
    object = _constant("thread.run")
    created_at = serializers.IntegerField(help_text=_UNIX)
    thread_id = serializers.UUIDField()
    assistant_id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=RunStatus.choices)
    required_action = serializers.DictField(allow_null=True, help_text="Always null.")
    last_error = RunError(allow_null=True)
    expires_at = serializers.IntegerField(allow_null=True)
    started_at = serializers.IntegerField(allow_null=True, help_text=_UNIX)
    cancelled_at = serializers.IntegerField(allow_null=True, help_text=_UNIX)
    failed_at = serializers.IntegerField(allow_null=True, help_text=_UNIX)
    completed_at = serializers.IntegerField(allow_null=True, help_text=_UNIX)
    incomplete_details = serializers.DictField(allow_null=True)
    model = serializers.CharField(help_text="The app's generator.")
    instructions = serializers.CharField(allow_blank=True)
    tools = RunTool(many=True)
    metadata = _metadata()
    usage = RunUsage(allow_null=True, help_text="Set once the run has finished.")
    temperature = serializers.FloatField(allow_null=True)
    top_p = serializers.FloatField(allow_null=True)
    max_prompt_tokens = serializers.IntegerField(allow_null=True)
    max_completion_tokens = serializers.IntegerField(allow_null=True)
    truncation_strategy = TruncationStrategy()
    response_format = _constant("auto")
    tool_choice = _constant("auto")
    parallel_tool_calls = serializers.BooleanField()
    query_id = serializers.UUIDField(
        allow_null=True,
        help_text="The answer's query execution: its quoted sources and citations are at "
        "`/semantics/apps/{llm_app_id}/query-execution-sources/{query_id}/get-quoted-sources`.",
    )


class FileSearchResultContent(serializers.Serializer):
    type = _constant("text")
    text = serializers.CharField(help_text="The chunk's text.")


class FileSearchResult(serializers.Serializer):
    file_id = serializers.UUIDField()
    file_name = serializers.CharField()
    score = serializers.FloatField(help_text="score_norm, 0..1")
    content = FileSearchResultContent(
        many=True,
        required=False,
        help_text="Only when `include[]` names "
        "`step_details.tool_calls[*].file_search.results[*].content`.",
    )


class FileSearchRankingOptions(serializers.Serializer):
    ranker = _constant("default_2024_08_21")
    score_threshold = serializers.FloatField(help_text="The app's min_score.")


class FileSearchCall(serializers.Serializer):
    ranking_options = FileSearchRankingOptions()
    results = FileSearchResult(many=True)


class FileSearchToolCall(serializers.Serializer):
    id = serializers.CharField()
    type = _constant("file_search")
    file_search = FileSearchCall()


class MessageCreation(serializers.Serializer):
    message_id = serializers.UUIDField()


class RunStepDetails(serializers.Serializer):
    type = serializers.ChoiceField(choices=["tool_calls", "message_creation"])
    tool_calls = FileSearchToolCall(
        many=True, required=False, help_text="For `tool_calls`: one file_search call."
    )
    message_creation = MessageCreation(required=False, help_text="For `message_creation`.")


class RunStepObject(serializers.Serializer):
    id = serializers.UUIDField()
    object = _constant("thread.run.step")
    created_at = serializers.IntegerField(help_text=_UNIX)
    assistant_id = serializers.UUIDField()
    thread_id = serializers.UUIDField()
    run_id = serializers.UUIDField()
    type = serializers.ChoiceField(choices=["tool_calls", "message_creation"])
    status = _constant("completed")
    step_details = RunStepDetails()
    last_error = RunError(allow_null=True)
    expired_at = serializers.IntegerField(allow_null=True)
    cancelled_at = serializers.IntegerField(allow_null=True)
    failed_at = serializers.IntegerField(allow_null=True)
    completed_at = serializers.IntegerField(allow_null=True, help_text=_UNIX)
    metadata = serializers.DictField(
        child=serializers.CharField(max_length=512),
        help_text="A reasoning step's number, sub-question, short answer and confidence.",
    )
    usage = RunUsage(allow_null=True, help_text="The tokens of this step's model calls.")


def _list_of(item: type[serializers.Serializer], name: str) -> type[serializers.Serializer]:
    return type(
        name,
        (serializers.Serializer,),
        {
            "object": _constant("list"),
            "data": item(many=True),
            "first_id": serializers.UUIDField(allow_null=True),
            "last_id": serializers.UUIDField(allow_null=True),
            "has_more": serializers.BooleanField(),
            "__doc__": f"A page of {item.__name__}s.",
        },
    )


MessageList = _list_of(MessageObject, "MessageList")
RunList = _list_of(RunObject, "RunList")
RunStepList = _list_of(RunStepObject, "RunStepList")
