"""The Responses API's writes (``POST /v1/responses``): the body checked with
OpenAI's error codes and ``param`` paths, a ``ResponseRecord`` written before the
work (see ``ResponseStatus``), the answer made by ``query_execute`` (so a response
leaves the same evidence as any other answer) and the record completed with it.

``previous_response_id`` chains turns: the earlier questions and the sections the
previous answer cited are searched with the new question, as a thread's follow-up is."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from citations.deletions import conversation_delete
from citations.generators import ModelError
from citations.models import (
    App,
    ConversationDeletion,
    QueryExecution,
    ResponseRecord,
    ResponseStatus,
)
from citations.services.execution import query_execute
from citations.services.questions import QueryRejected
from citations.services.searching import IndexMismatch
from citations.threads.errors import ThreadRejected
from citations.threads.selectors import CONTEXT_MAX_CHARS, CONTEXT_QUESTIONS, assistant_get
from citations.threads.services import content_clean, metadata_clean
from citations.threads.sources import sources_of
from core.caller import Caller
from core.permissions import Reader
from core.roles import Reach
from documents.models import ApiKey, Organization
from retrieval.models import VectorDatabase

logger = logging.getLogger(__name__)

INCLUDE_RESULTS = "file_search_call.results"
MAX_INPUT_ITEMS = 32
MAX_VECTOR_STORES = 16
STALE_BATCH = 500  # responses failed per sweep; the next sweep takes the rest
CHAIN_DEPTH = 8  # earlier turns read for a follow-up's retrieval context
# accepted as OpenAI's clients send them, with no effect on an answer made of sources
IGNORED = frozenset(
    {
        "temperature", "top_p", "max_output_tokens", "user", "store", "parallel_tool_calls",
        "tool_choice", "text", "truncation", "service_tier", "safety_identifier",
        "prompt_cache_key", "reasoning", "background", "stream_options",
    }
)  # fmt: skip
KNOWN = IGNORED | {
    "model", "input", "instructions", "tools", "include", "previous_response_id",
    "metadata", "stream",
}  # fmt: skip
_INPUT_ROLES = ("user", "assistant", "system", "developer")
_TEXT_PARTS = ("input_text", "output_text", "text")


@dataclass(frozen=True)
class ResponseRequest:
    """A checked ``POST /v1/responses`` body."""

    app: App
    question: str
    input: list[dict[str, str]]
    instructions: str
    tools: list[dict[str, Any]]
    include_results: bool
    previous: ResponseRecord | None
    metadata: dict[str, str]
    stream: bool


def _refuse(message: str, code: str, param: str | None, status: int = 400) -> ThreadRejected:
    return ThreadRejected(message, code=code, param=param, status=status)


def _flag(body: Mapping[str, Any], name: str) -> bool:
    value = body.get(name)
    if value is not None and not isinstance(value, bool):
        raise _refuse(f"{name} must be a boolean", "invalid_type", name)
    return bool(value)


def _text(content: object, param: str) -> str:
    """A message's content: a string or a list of text parts (``input_text``, …)."""
    if isinstance(content, list):
        if not all(isinstance(p, Mapping) and p.get("type") in _TEXT_PARTS for p in content):
            raise _refuse("only text content parts are supported", "unsupported_content", param)
        content = [{"type": "text", "text": p.get("text")} for p in content]
    return content_clean(content, param=param)


def _input_item(item: object, param: str) -> dict[str, str]:
    if not isinstance(item, Mapping):
        raise _refuse("an input item must be an object", "invalid_input", param)
    if item.get("type", "message") != "message":
        raise _refuse(
            "only message input items are supported", "unsupported_input", f"{param}.type"
        )
    role = item.get("role")
    if role not in _INPUT_ROLES:
        raise _refuse(
            f"role must be one of {', '.join(_INPUT_ROLES)}", "invalid_role", f"{param}.role"
        )
    return {"role": str(role), "content": _text(item.get("content"), f"{param}.content")}


def _input(raw: object) -> list[dict[str, str]]:
    """``input``: a string (one user message) or a list of message items ending with a
    user message, the question answered."""
    if isinstance(raw, str):
        return [{"role": "user", "content": _text(raw, "input")}]
    if not isinstance(raw, list) or not raw or len(raw) > MAX_INPUT_ITEMS:
        raise _refuse(
            f"input must be a string or a list of 1 to {MAX_INPUT_ITEMS} messages",
            "invalid_input",
            "input",
        )
    items = [_input_item(item, f"input[{index}]") for index, item in enumerate(raw)]
    if items[-1]["role"] != "user":
        raise _refuse("the last input item must be a user message", "no_user_message", "input")
    return items


def _instructions(raw: object, items: list[dict[str, str]]) -> str:
    """``instructions``, then the input's system and developer messages."""
    if raw is not None and not isinstance(raw, str):
        raise _refuse("instructions must be a string", "invalid_type", "instructions")
    parts = [raw or ""] + [i["content"] for i in items if i["role"] in ("system", "developer")]
    return "\n\n".join(part for part in parts if part)


def _vector_stores(app: App, organization: Organization, raw: object, param: str) -> list[str]:
    """The named vector stores, each one the app searches; another organization's (or an
    unknown id) is not found, one of the caller's the app does not search is refused."""
    served = {str(pk) for pk in app_vector_store_ids(app)}
    if raw is None:
        return sorted(served)
    if not isinstance(raw, list) or len(raw) > MAX_VECTOR_STORES:
        raise _refuse(
            f"vector_store_ids must be a list of at most {MAX_VECTOR_STORES} ids",
            "invalid_type",
            param,
        )
    for index, store in enumerate(raw):
        if str(store) in served:
            continue
        ours = isinstance(store, str) and _is_store_of(organization, store)
        if ours:
            raise _refuse(
                f"vector store '{store}' is not one the app searches",
                "vector_store_not_in_app",
                f"{param}[{index}]",
            )
        raise _refuse(
            f"No vector store found with id '{store}'.", "not_found", f"{param}[{index}]", 404
        )
    named = [str(store) for store in raw]
    if set(named) != served:  # an answer searches the app's stores together, never a part
        raise _refuse(
            "the app searches all of its vector stores together: name all of them "
            f"({', '.join(sorted(served))}) or leave vector_store_ids out",
            "unsupported",
            param,
        )
    return named


def _uuid(raw: object) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(raw))
    except ValueError:
        return None


def _is_store_of(organization: Organization, store: str) -> bool:
    key = _uuid(store)
    return key is not None and (
        VectorDatabase.objects.filter(organization=organization, pk=key).exists()
    )


def app_vector_store_ids(app: App) -> list[Any]:
    return list(
        VectorDatabase.objects.filter(data_sources__apps=app)
        .distinct()
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def _tools(app: App, organization: Organization, raw: object) -> list[dict[str, Any]]:
    """``[{"type": "file_search", "vector_store_ids": […]}]``; none means the app's."""
    if raw is None or raw == []:
        stores = _vector_stores(app, organization, None, "tools")
        return [{"type": "file_search", "vector_store_ids": stores}]
    if not isinstance(raw, list):
        raise _refuse("tools must be a list", "invalid_type", "tools")
    tools = []
    for index, tool in enumerate(raw):
        param = f"tools[{index}]"
        if not isinstance(tool, Mapping):
            raise _refuse("a tool must be an object", "invalid_type", param)
        if tool.get("type") != "file_search":
            raise _refuse(
                "only the file_search tool is supported", "unsupported_tool", f"{param}.type"
            )
        if tool.get("filters") is not None:
            raise _refuse(
                "file_search filters are not supported", "unsupported", f"{param}.filters"
            )
        stores = _vector_stores(
            app, organization, tool.get("vector_store_ids"), f"{param}.vector_store_ids"
        )
        tools.append({"type": "file_search", "vector_store_ids": stores})
    return tools


def include_results(raw: object) -> bool:
    """Whether ``include`` asks for the search results; anything else is refused."""
    if raw is None:
        return False
    if not isinstance(raw, list) or any(value != INCLUDE_RESULTS for value in raw):
        raise _refuse(f"include may only name '{INCLUDE_RESULTS}'", "invalid_include", "include")
    return bool(raw)


def response_get(
    *,
    organization: Organization | None,
    response_id: object,
    reader: Reader,
    reach: Reach = Reach.READ,
) -> ResponseRecord:
    """A response of ``organization`` that ``reader`` reaches under ``reach`` (its
    own; every one for a role that audits, core.roles); another tenant's, one out of
    reach, or a deleted one, is not found."""
    key = _uuid(response_id)
    found = (
        ResponseRecord.objects.select_related("app", "query")
        .filter(reader.reachable(reach), organization=organization, pk=key)
        .filter(deleted_at__isnull=True)
        .first()
        if key and organization is not None
        else None
    )
    if found is None:
        raise _refuse(
            f"No response found with id '{response_id}'.", "not_found", "response_id", 404
        )
    return found


def response_request_parse(
    *, organization: Organization, body: Mapping[str, Any], reader: Reader
) -> ResponseRequest:
    """Check a body as OpenAI does: the first problem is refused with its ``param``.
    A ``previous_response_id`` must be ``reader``'s own: a follow-up reads the turn it
    follows into its search, so nobody continues another's conversation."""
    unknown = sorted(k for k in body if k not in KNOWN)
    if unknown:
        raise _refuse(f"Unknown parameter: '{unknown[0]}'.", "unknown_parameter", unknown[0])
    model = body.get("model")
    if not model or not isinstance(model, str):
        raise _refuse(
            "model is required: the id of an app (assistant)", "missing_required_parameter", "model"
        )
    try:
        app = assistant_get(organization=organization, assistant_id=model)
    except ThreadRejected as exc:
        raise _refuse(exc.message, "model_not_found", "model", 404) from exc
    if body.get("input") is None:
        raise _refuse("input is required", "missing_required_parameter", "input")
    items = _input(body["input"])
    previous = body.get("previous_response_id")
    if previous is not None:
        if not isinstance(previous, str):
            raise _refuse(
                "previous_response_id must be a string", "invalid_type", "previous_response_id"
            )
        try:
            previous = response_get(
                organization=organization, response_id=previous, reader=reader, reach=Reach.OWN
            )
        except ThreadRejected as exc:
            exc.param = "previous_response_id"
            raise
    if _flag(body, "background"):
        raise _refuse("background responses are not supported", "unsupported", "background")
    return ResponseRequest(
        app=app,
        question=items[-1]["content"],
        input=items,
        instructions=_instructions(body.get("instructions"), items),
        tools=_tools(app, organization, body.get("tools")),
        include_results=include_results(body.get("include")),
        previous=previous,
        metadata=metadata_clean(body.get("metadata")),
        stream=_flag(body, "stream"),
    )


def response_start(
    *, organization: Organization, request: ResponseRequest, user: Any, api_key: ApiKey | None
) -> ResponseRecord:
    """The status row, written (and committed) before the answer is made."""
    return ResponseRecord.objects.create(
        organization=organization,
        app=request.app,
        previous=request.previous,
        question=request.question,
        input=request.input,
        instructions=request.instructions,
        tools=request.tools,
        metadata=request.metadata,
        caller_user=user if user is not None and user.is_authenticated else None,
        caller_api_key=api_key,
    )


def retrieval_context(*, response: ResponseRecord) -> str:
    """What a follow-up is searched with besides its own words: the earlier user turns
    (of the input, then of the chain of previous responses) and the sections the
    previous answer cited, within the same budget as a thread's follow-up."""
    questions = [i["content"] for i in reversed(response.input[:-1]) if i["role"] == "user"]
    sections: list[str] = []
    turn, depth = response.previous, 0
    while turn is not None and depth < CHAIN_DEPTH:
        questions.append(turn.question)
        if depth == 0 and turn.query is not None:
            for source in sources_of(execution=turn.query):
                if source["quoted_as"] and source["section"] not in sections:
                    sections.append(source["section"])
        turn, depth = turn.previous, depth + 1
    picked = questions[:CONTEXT_QUESTIONS]
    parts = [q[: CONTEXT_MAX_CHARS // 2] for q in reversed(picked)] + sections
    return "\n".join(parts)[-CONTEXT_MAX_CHARS:]


def response_execute(
    *,
    response_id: uuid.UUID | str,
    caller_address: str | None = None,
    user_agent: str | None = None,
    base_url: str | None = None,
) -> ResponseRecord:
    """Answer the response's question with its app, recorded as asked from
    ``caller_address`` with ``user_agent`` (the request answering it, whose origin is
    ``base_url``); a refusal, an index this server cannot read or a model's failure ends
    it ``failed`` with OpenAI's error code, anything else too, then re-raised."""
    response = ResponseRecord.objects.select_related(
        "app", "previous", "previous__query", "caller_user", "caller_api_key"
    ).get(pk=response_id)
    try:
        execution = query_execute(
            app=response.app,
            question=response.question,
            user=response.caller_user,
            api_key=response.caller_api_key,
            origin="response",
            caller_address=caller_address,
            user_agent=user_agent,
            retrieval_context=retrieval_context(response=response),
            instructions=response.instructions or None,
            base_url=base_url,
        )
    except QueryRejected as exc:
        return _fail(response, "invalid_prompt", exc.message)
    except IndexMismatch as exc:
        return _fail(response, "server_error", f"{exc.code}: {exc.message}")
    except ModelError as exc:
        code = "rate_limit_exceeded" if exc.code == "model_rate_limited" else "server_error"
        return _fail(response, code, f"{exc.code}: {exc.message}")
    except Exception as exc:
        _fail(response, "server_error", f"internal error: {type(exc).__name__}")
        raise
    return _complete(response, execution)


@transaction.atomic
def _complete(response: ResponseRecord, execution: QueryExecution) -> ResponseRecord:
    ResponseRecord.objects.filter(pk=response.pk, status=ResponseStatus.IN_PROGRESS).update(
        status=ResponseStatus.COMPLETED, query=execution, completed_at=timezone.now()
    )
    response.refresh_from_db()
    return response


def _fail(response: ResponseRecord, code: str, message: str) -> ResponseRecord:
    ResponseRecord.objects.filter(pk=response.pk, status=ResponseStatus.IN_PROGRESS).update(
        status=ResponseStatus.FAILED,
        error_code=code,
        error_message=message[:2000],
        completed_at=timezone.now(),
    )
    response.refresh_from_db()
    return response


def response_delete(
    *, response: ResponseRecord, caller: Caller, role: str | None, reason: str = ""
) -> None:
    """Hide a response from the API; its record and evidence stay for audit, and the
    deletion is chained evidence (citations/deletions.py)."""
    kind = ConversationDeletion.Kind.RESPONSE
    conversation_delete(record=response, kind=kind, caller=caller, role=role, reason=reason)


def responses_sweep_stale(*, stale_seconds: int | None = None) -> list[str]:
    """Fail the responses still ``in_progress`` after ``stale_seconds``: the process
    answering them died (its query execution, if any, is failed by the answers'
    sweeper); a client polling ``GET /v1/responses/{id}`` then sees why. The ids."""
    if stale_seconds is None:
        stale_seconds = settings.PROVENANCE_QUERY_STALE_SECONDS
    cutoff = timezone.now() - timedelta(seconds=stale_seconds)
    stale = ResponseRecord.objects.filter(status=ResponseStatus.IN_PROGRESS, created_at__lt=cutoff)
    ids = [str(pk) for pk in stale.values_list("pk", flat=True)[:STALE_BATCH]]
    stale.filter(pk__in=ids).update(
        status=ResponseStatus.FAILED,
        error_code="server_error",
        error_message=(
            f"abandoned: still in progress {stale_seconds} s after it was asked (the process "
            "answering it stopped)"
        ),
        completed_at=timezone.now(),
    )
    return ids
