"""Input and output shapes of ``/v1/flow/apps``, and the builder of an app's output."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from rest_framework import serializers

from citations.llm_apps import MODEL_SETTINGS, RETRIEVAL_BOUNDS
from citations.models import MAX_MODEL_SECONDS, App, ModelContract, ModelFallback, Reasoning
from core.fields import StrictBooleanField, StrictFloatField, StrictIntegerField, list_of
from documents.api.serializers import JsonStringField
from documents.data_sources import MAX_NAME_CHARS

MAX_PROMPT_CHARS = 20_000  # a system prompt is instructions, not a document
MAX_REFS = 100  # data sources one app reads from


def _name_field(**kwargs: Any) -> JsonStringField:
    return JsonStringField(min_length=1, max_length=MAX_NAME_CHARS, **kwargs)


class AppSettingsInput(serializers.Serializer):
    """The settings an app is created with or changed to; all optional."""

    is_public = StrictBooleanField(required=False, help_text="public apps need no API key")
    generator = serializers.ChoiceField(choices=App.Generator.values, required=False)
    model = JsonStringField(
        required=False, allow_blank=True, max_length=200, help_text="an LLM generator's model"
    )
    prompt = JsonStringField(
        required=False,
        allow_blank=True,
        max_length=MAX_PROMPT_CHARS,
        trim_whitespace=False,
        help_text="system prompt of an LLM generator",
    )
    temperature = StrictFloatField(required=False, allow_null=True, min_value=0, max_value=2)
    max_output_tokens = StrictIntegerField(required=False, min_value=1, max_value=200_000)
    reasoning = serializers.ChoiceField(choices=Reasoning.values, required=False)
    model_contract = serializers.ChoiceField(
        choices=ModelContract.values,
        required=False,
        help_text="the form an OpenAI-compatible model answers in (auto: nested, then flat "
        "for a model that cannot keep it)",
    )
    model_fallback = serializers.ChoiceField(
        choices=ModelFallback.values,
        required=False,
        help_text="extractive: answer extractively (and say so) when the model errs, times "
        "out or nothing of its reply verifies; fail: the question fails (502/504)",
    )
    model_connect_seconds = StrictIntegerField(
        required=False, allow_null=True, min_value=1, max_value=MAX_MODEL_SECONDS
    )
    model_first_token_seconds = StrictIntegerField(
        required=False, allow_null=True, min_value=1, max_value=MAX_MODEL_SECONDS
    )
    model_timeout_seconds = StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_MODEL_SECONDS,
        help_text="seconds for a whole model reply; null = PROVENANCE_LLM_TIMEOUT_SECONDS",
    )
    top_k = StrictIntegerField(required=False, min_value=1, max_value=100)
    candidate_k = StrictIntegerField(required=False, min_value=1, max_value=1000)
    min_score = StrictFloatField(required=False, min_value=0, max_value=1)
    answer_threshold = StrictFloatField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=1,
        help_text="least answer probability to quote; null = the answer scorer's fitted one",
    )
    max_answer_sentences = StrictIntegerField(required=False, min_value=1, max_value=50)

    @staticmethod
    def retrieval_of(settings: dict[str, Any]) -> dict[str, Any]:
        return {key: settings.pop(key) for key in list(settings) if key in RETRIEVAL_BOUNDS}

    @staticmethod
    def model_settings_of(settings: dict[str, Any]) -> dict[str, Any]:
        return {key: settings.pop(key) for key in list(settings) if key in MODEL_SETTINGS}


class AppChangeInput(AppSettingsInput):
    name = _name_field(required=False)
    data_sources = serializers.ListField(
        child=JsonStringField(min_length=1, max_length=MAX_NAME_CHARS),
        min_length=1,
        max_length=MAX_REFS,
        required=False,
        help_text="data sources by id or by name",
    )


class AppCreateInput(AppChangeInput):
    name = _name_field()
    data_sources = serializers.ListField(
        child=JsonStringField(min_length=1, max_length=MAX_NAME_CHARS),
        min_length=1,
        max_length=MAX_REFS,
        help_text="data sources by id or by name",
    )


class AppDataSourceOutput(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()


class AppOutput(serializers.Serializer):
    id = serializers.UUIDField(help_text="the llm_app_id of /semantics/apps/{llm_app_id}/…")
    object = serializers.CharField(help_text='"app"')
    name = serializers.CharField()
    data_sources = AppDataSourceOutput(many=True)
    is_public = serializers.BooleanField()
    generator = serializers.CharField()
    model = serializers.CharField(allow_blank=True)
    prompt = serializers.CharField(allow_blank=True)
    temperature = serializers.FloatField(allow_null=True)
    max_output_tokens = serializers.IntegerField()
    reasoning = serializers.CharField()
    model_contract = serializers.CharField()
    model_fallback = serializers.CharField()
    model_connect_seconds = serializers.IntegerField(allow_null=True)
    model_first_token_seconds = serializers.IntegerField(allow_null=True)
    model_timeout_seconds = serializers.IntegerField(allow_null=True)
    top_k = serializers.IntegerField()
    candidate_k = serializers.IntegerField()
    min_score = serializers.FloatField()
    answer_threshold = serializers.FloatField(allow_null=True)
    max_answer_sentences = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    query_url = serializers.URLField(help_text="where to ask it (POST)")


AppList = list_of(AppOutput, "AppList")


def app_output(app: App, absolute: Any) -> dict[str, Any]:
    sources = sorted(app.data_sources.all(), key=lambda s: (s.name, str(s.pk)))
    return {
        "id": str(app.pk),
        "object": "app",
        "name": app.name,
        "data_sources": [{"id": str(s.pk), "name": s.name} for s in sources],
        "is_public": app.is_public,
        "generator": app.generator,
        "model": app.model,
        "prompt": app.prompt,
        "temperature": app.temperature,
        "max_output_tokens": app.max_output_tokens,
        "reasoning": app.reasoning,
        **{setting: getattr(app, setting) for setting in MODEL_SETTINGS},
        "top_k": app.top_k,
        "candidate_k": app.candidate_k,
        "min_score": app.min_score,
        "answer_threshold": app.answer_threshold,
        "max_answer_sentences": app.max_answer_sentences,
        "created_at": app.created_at,
        "query_url": absolute(reverse("query-executions", args=[app.pk])),
    }
