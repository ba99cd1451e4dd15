"""``/v1/threads/…``: the OpenAI Assistants endpoints, thin — parse, call one
service or selector, shape the OpenAI object."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any, ClassVar

from django.http import HttpResponseBase
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from citations.deletions import deletion_reason
from citations.models import Thread
from citations.threads import run_steps, selectors, services, streaming
from citations.threads.errors import ThreadRejected
from citations.threads.schema import (
    RUN_EVENTS,
    DeletionInput,
    MessageCreateInput,
    MessageDeleted,
    MessageList,
    MessageObject,
    RunCreateInput,
    RunList,
    RunObject,
    RunStepList,
    RunStepObject,
    ThreadCreateInput,
    ThreadDeleted,
    ThreadObject,
)
from citations.threads.serializers import (
    list_output,
    list_params,
    message_output,
    run_output,
    thread_output,
)
from core.caller import Caller
from core.errors import error_responses
from core.pagination import LIST_PARAMETERS
from core.permissions import Reader, view_reach
from core.roles import Action, Reach
from core.sse import event_stream
from core.tenancy import member_organization

POLL_AFTER_MS = "250"  # create_and_poll waits this long between polls


def _body(request: Request) -> Mapping[str, Any]:
    if not isinstance(request.data, Mapping):
        raise ThreadRejected("the body must be a JSON object", code="invalid_body")
    return request.data


class _View(APIView):
    """Domain refusals become the OpenAI error shape, with their status and param."""

    # core.errors maps them; this docstring is also the OpenAPI description of the
    # views below that have none of their own, so it stays as clients have read it

    # threads, messages, runs and steps are asking (core.roles); deleting is not
    role_actions: ClassVar[dict[str, Action]] = {"GET": Action.ASK, "POST": Action.ASK}
    # a thread is its asker's: read by them and by roles that audit, written by them,
    # deleted by any role that may delete (core.roles ``Reach``)
    role_reach: ClassVar[dict[str, Reach]] = {
        "GET": Reach.READ,
        "POST": Reach.OWN,
        "DELETE": Reach.ORGANIZATION,
    }

    def thread(self, request: Request, thread_id: str) -> Thread:
        """The named thread, if this method reaches it (else 404)."""
        return selectors.thread_get(
            organization=member_organization(request),
            thread_id=thread_id,
            reader=Reader.of(request),
            reach=view_reach(self, request.method or ""),
        )

    def deleted(self, request: Request, record_id: object, kind: str) -> Response:
        """OpenAI's answer to a deletion: ``{"id", "object": "<kind>.deleted", "deleted"}``."""
        return Response({"id": str(record_id), "object": f"{kind}.deleted", "deleted": True})


_DELETE_ACTIONS: dict[str, Action] = {"DELETE": Action.DELETE_CONVERSATIONS}


class ThreadsView(_View):
    """Create a thread, optionally with its first messages."""

    @extend_schema(
        request=ThreadCreateInput, responses={200: ThreadObject, **error_responses(400, 415)}
    )
    def post(self, request: Request) -> Response:
        body, caller = _body(request), Caller.from_request(request)
        thread = services.thread_create(
            organization=caller.member_organization,
            metadata=body.get("metadata"),
            messages=body.get("messages"),
            caller=caller.label,
            user=caller.user,
            api_key=caller.api_key,
        )
        return Response(thread_output(thread))


class ThreadDetailView(_View):
    """A thread; deleting it hides it with its messages and runs (the rows stay, the
    deletion is recorded with who, when, from where and the optional reason)."""

    role_actions = {**_View.role_actions, **_DELETE_ACTIONS}

    @extend_schema(responses={200: ThreadObject, **error_responses(404)})
    def get(self, request: Request, thread_id: str) -> Response:
        return Response(thread_output(self.thread(request, thread_id)))

    @extend_schema(
        request=DeletionInput, responses={200: ThreadDeleted, **error_responses(400, 404)}
    )
    def delete(self, request: Request, thread_id: str) -> Response:
        thread, reason = self.thread(request, thread_id), deletion_reason(request.data)
        reader = Reader.of(request)
        services.thread_delete(
            thread=thread, caller=Caller.from_request(request), role=reader.role, reason=reason
        )
        return self.deleted(request, thread.pk, "thread")


class MessagesView(_View):
    """The thread's messages; an answer carries ``file_citation`` annotations and a
    second text block with the source-tracing fields of every retrieved chunk."""

    @extend_schema(
        operation_id="v1_threads_messages_list",
        parameters=[*LIST_PARAMETERS, OpenApiParameter("run_id", str)],
        responses={200: MessageList, **error_responses(400, 404)},
    )
    def get(self, request: Request, thread_id: str) -> Response:
        params = list_params(request.query_params)
        thread = self.thread(request, thread_id)
        messages = selectors.messages_of(thread=thread)
        if run_id := request.query_params.get("run_id"):
            messages = messages.filter(run=selectors.run_get(thread=thread, run_id=run_id))
        page = selectors.page_of(messages, **params.as_kwargs())
        shape = partial(message_output, absolute=request.build_absolute_uri)
        return Response(list_output(page.items, page.has_more, shape))

    @extend_schema(
        request=MessageCreateInput,
        responses={200: MessageObject, **error_responses(400, 404, 415)},
    )
    def post(self, request: Request, thread_id: str) -> Response:
        body = _body(request)
        message = services.message_create(
            thread=self.thread(request, thread_id),
            role=body.get("role"),
            content=body.get("content"),
            metadata=body.get("metadata"),
        )
        return Response(message_output(message, absolute=request.build_absolute_uri))


class MessageDetailView(_View):
    """A message of a thread; deleting it hides it (recorded like a thread's deletion)."""

    role_actions = {**_View.role_actions, **_DELETE_ACTIONS}

    @extend_schema(responses={200: MessageObject, **error_responses(404)})
    def get(self, request: Request, thread_id: str, message_id: str) -> Response:
        thread = self.thread(request, thread_id)
        message = selectors.message_get(thread=thread, message_id=message_id)
        return Response(message_output(message, absolute=request.build_absolute_uri))

    @extend_schema(
        request=DeletionInput, responses={200: MessageDeleted, **error_responses(400, 404)}
    )
    def delete(self, request: Request, thread_id: str, message_id: str) -> Response:
        thread, reason = self.thread(request, thread_id), deletion_reason(request.data)
        message = selectors.message_get(thread=thread, message_id=message_id)
        services.message_delete(
            message=message,
            caller=Caller.from_request(request),
            role=Reader.of(request).role,
            reason=reason,
        )
        return self.deleted(request, message.pk, "thread.message")


class RunsView(_View):
    """Start a run (a Celery worker executes it) or list the thread's runs; with
    ``"stream": true`` the run's events are streamed until it ends."""

    @extend_schema(
        operation_id="v1_threads_runs_list",
        parameters=LIST_PARAMETERS,
        responses={200: RunList, **error_responses(400, 404)},
    )
    def get(self, request: Request, thread_id: str) -> Response:
        params = list_params(request.query_params)
        runs = selectors.runs_of(thread=self.thread(request, thread_id))
        page = selectors.page_of(runs, **params.as_kwargs())
        return Response(list_output(page.items, page.has_more, run_output))

    @extend_schema(
        request=RunCreateInput,
        responses={
            (200, "application/json"): RunObject,
            (200, "text/event-stream"): RUN_EVENTS,
            **error_responses(400, 404, 415),
        },
    )
    def post(self, request: Request, thread_id: str) -> HttpResponseBase:
        body = _body(request)
        thread = self.thread(request, thread_id)
        stream = body.get("stream", False)
        if stream is not None and not isinstance(stream, bool):
            raise ThreadRejected("stream must be a boolean", code="invalid_stream", param="stream")
        if not body.get("assistant_id"):
            raise ThreadRejected(
                "assistant_id is required", code="missing_required_parameter", param="assistant_id"
            )
        caller = Caller.from_request(request)
        run = services.run_create(
            thread=thread,
            app=selectors.assistant_get(
                organization=caller.member_organization, assistant_id=body["assistant_id"]
            ),
            user=caller.user,
            api_key=caller.api_key,
            caller_address=caller.origin,
            user_agent=caller.user_agent,
            instructions=body.get("instructions"),
            additional_instructions=body.get("additional_instructions"),
            additional_messages=body.get("additional_messages"),
            metadata=body.get("metadata"),
        )
        if stream:  # the run is committed and queued: the stream watches the worker answer it
            return event_stream(
                streaming.run_events(run_id=str(run.pk), absolute=request.build_absolute_uri)
            )
        return Response(run_output(run), headers={"openai-poll-after-ms": POLL_AFTER_MS})


class RunDetailView(_View):
    """A run's status; ``create_and_poll`` polls this until the run is terminal."""

    @extend_schema(responses={200: RunObject, **error_responses(404)})
    def get(self, request: Request, thread_id: str, run_id: str) -> Response:
        run = selectors.run_get(thread=self.thread(request, thread_id), run_id=run_id)
        return Response(run_output(run), headers={"openai-poll-after-ms": POLL_AFTER_MS})


class RunCancelView(_View):
    """Cancel a queued or running run; a finished run cannot be cancelled."""

    @extend_schema(request=None, responses={200: RunObject, **error_responses(400, 404)})
    def post(self, request: Request, thread_id: str, run_id: str) -> Response:
        run = selectors.run_get(thread=self.thread(request, thread_id), run_id=run_id)
        return Response(run_output(services.run_cancel(run=run)))


INCLUDE_PARAMETER = OpenApiParameter(
    "include[]",
    {"type": "array", "items": {"type": "string", "enum": [run_steps.INCLUDE_CONTENT]}},
    description="ask for the file_search results' content",
)


def _include(request: Request) -> bool:
    query = request.query_params
    return run_steps.include_content(query.getlist("include[]") + query.getlist("include"))


class RunStepsView(_View):
    """The run's steps: a file_search call per reasoning step, then the message."""

    @extend_schema(
        operation_id="v1_threads_runs_steps_list",
        parameters=[*LIST_PARAMETERS, INCLUDE_PARAMETER],
        responses={200: RunStepList, **error_responses(400, 404)},
    )
    def get(self, request: Request, thread_id: str, run_id: str) -> Response:
        params, content = list_params(request.query_params), _include(request)
        run = selectors.run_get(thread=self.thread(request, thread_id), run_id=run_id)
        items, has_more = run_steps.run_steps_page(
            run_steps.run_steps_of(run=run), **params.as_kwargs()
        )
        shape = partial(run_steps.run_step_output, run, content=content)
        return Response(list_output(items, has_more, shape))


class RunStepDetailView(_View):
    @extend_schema(
        parameters=[INCLUDE_PARAMETER],
        responses={200: RunStepObject, **error_responses(400, 404)},
    )
    def get(self, request: Request, thread_id: str, run_id: str, step_id: str) -> Response:
        content = _include(request)
        run = selectors.run_get(thread=self.thread(request, thread_id), run_id=run_id)
        step = run_steps.run_step_get(run=run, step_id=step_id)
        return Response(run_steps.run_step_output(run, step, content=content))
