"""The ``openai`` generator: Chat Completions of any OpenAI-compatible server (OpenAI,
Azure OpenAI, Ollama, vLLM, llama.cpp's server, llama-cpp-python, LM Studio) under the
prompt contract of the retrieval-traceability document.

Each passage goes to the model between delimiter lines made fresh for each request,
so no document can close the data block. The request asks for the strongest form the
server takes (structured output, streaming, a seed; :mod:`citations.generators.wire`)
and steps down on a refusal; the reply is read in the nested contract or, when a model
cannot keep it, the flat one (:mod:`citations.generators.openai_contracts`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import openai
from django.conf import settings

from citations.generators import ModelError
from citations.generators.live import listening
from citations.generators.llm import (
    FIX_REQUEST,
    Attempt,
    Refused,
    TwoAttempts,
    Where,
    api_key,
    call_evidence,
    model_reply,
    send,
    sha256_json,
    timeouts_for,
)
from citations.generators.openai_contracts import (
    ReplyWatcher,
    contract_checks,
    contract_messages,
    contract_read,
    response_format,
)
from citations.generators.openai_request import (
    BadBody,
    Completion,
    ReplyTimeout,
    completion_request,
    timeout_error,
)
from citations.generators.wire import WIRES, Wire, refusal_step


@dataclass(frozen=True)
class Conversation:
    """The messages of one attempt, the contract they ask for, and what a flat retry
    needs to start afresh."""

    contract: str
    messages: list[dict[str, str]]
    question: str
    system: str
    passages: Any


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _body(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    text = getattr(response, "text", None)
    return text if isinstance(text, str) else str(exc)


class OpenAIChatGenerator(TwoAttempts):
    name = "openai"
    key_name = "OPENAI_API_KEY"

    def __init__(self, app: Any) -> None:
        self.app = app
        self.timeouts = timeouts_for(app)

    def _client(self) -> openai.OpenAI:
        self.model_required()
        return openai.OpenAI(
            api_key=api_key(self.key_name, "OpenAI-compatible"),
            timeout=self.timeouts.httpx_timeout(streamed=False),
            max_retries=0,
        )

    def _contract(self, base_url: str) -> str:
        """The app's contract, or under ``auto`` the one this server's model kept."""
        chosen = self.app.model_contract
        if chosen != "auto":
            return chosen
        return WIRES.recall(base_url, self.app.model)[0].contract

    def first_messages(self, question: str, passages: Any, instructions: str | None) -> Any:
        system = self.system_prompt(instructions)
        contract = self._contract(str(self._client().base_url))
        messages = contract_messages(contract, system, question, passages)
        return Conversation(contract, messages, question, system, passages)

    def retry_messages(self, messages: Any, first: Attempt, to_fix: list[str]) -> Any:
        """The retry: under ``auto``, a nested reply that verified nothing starts afresh in
        the flat contract; otherwise the model is told what to fix."""
        nothing = first.checks is None or not any(c.supported for c in first.checks)
        auto = self.app.model_contract == "auto"
        if auto and messages.contract == "nested" and nothing and first.model_error is None:
            flat = contract_messages("flat", messages.system, messages.question, messages.passages)
            return replace(messages, contract="flat", messages=flat)
        fix = FIX_REQUEST.format(codes="\n".join(f"- {line}" for line in to_fix))
        conversation = [
            *messages.messages,
            {"role": "assistant", "content": first.reply_text},
            {"role": "user", "content": fix},
        ]
        return replace(messages, messages=conversation)

    def attempts_read(self, first: Attempt, second: Attempt) -> None:
        """A flat retry that did better than the nested reply (read where that could not
        be, or verified a claim where that verified none): this server's model keeps the
        flat contract, and later questions start with it."""
        if second.call.wire.get("contract") != "flat" or second.checks is None:
            return
        verified = any(c.supported for c in second.checks)
        if first.checks is None or verified:
            base_url, model = second.call.base_url, self.app.model
            wire, _ = WIRES.recall(base_url, model)
            WIRES.remember(base_url, model, replace(wire, contract="flat"))

    def _request(
        self, messages: list[dict[str, str]], contract: str | None, wire: Wire, max_tokens: int
    ) -> dict[str, Any]:
        """The request under ``wire``; ``contract`` None asks for any JSON object."""
        request: dict[str, Any] = {"model": self.app.model, "messages": messages}
        if wire.length != "none":
            request[wire.length] = max_tokens
        if wire.temperature and self.app.temperature is not None:
            request["temperature"] = self.app.temperature
        if wire.seed and settings.PROVENANCE_LLM_SEED is not None:
            request["seed"] = settings.PROVENANCE_LLM_SEED
        if wire.stream:
            request["stream"] = True
        kind = wire.response_format
        if contract is None and kind != "none":
            kind = "json_object"  # any JSON object: the plan of steps has its own shape
        form = response_format(contract or "nested", kind)
        if form is not None:
            request["response_format"] = form
        return request

    def _send(
        self, client: openai.OpenAI, build: Any, where: Where, on_text: Any = None
    ) -> tuple[Any, dict[str, Any], Wire, bool]:
        """The request under the strongest wire this server takes, stepping down (and
        remembering) on each refusal; each step weakens one parameter, so this ends."""
        wire, remembered = WIRES.recall(where.base_url, self.app.model)
        while True:
            request = build(wire)

            def call(request: dict[str, Any] = request) -> tuple[Completion, str]:
                completion = completion_request(client, request, self.timeouts, on_text=on_text)
                return completion, completion.raw_text

            def refused(exc: Exception, wire: Wire = wire) -> Wire | None:
                status = getattr(exc, "status_code", 0) or 0
                return refusal_step(wire, status=status, body=_body(exc))

            try:
                sent = send(call, sdk=openai, where=where, refusal=refused)
            except Refused as refusal:
                wire, remembered = refusal.step, False
                WIRES.remember(where.base_url, self.app.model, wire)
                continue
            return sent, request, wire, remembered

    def exchange(
        self,
        messages: list[dict[str, str]],
        *,
        contract: str | None,
        number: int,
        codes: tuple[str, ...] = (),
        max_tokens: int | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> tuple[Any, str]:
        """One request and its reply's text, with the call as evidence (a failure carries
        its call on the :class:`ModelError`); ``on_text`` sees a streamed reply grow."""
        client = self._client()
        where = Where(
            "openai", self.app.model, str(client.base_url), self.key_name, self.timeouts.total
        )
        tokens = max_tokens or self.app.max_output_tokens

        def build(wire: Wire) -> dict[str, Any]:
            return self._request(messages, contract, wire, tokens)

        started = time.perf_counter()
        try:
            sent, request, wire, remembered = self._send(client, build, where, on_text)
        except (ModelError, ReplyTimeout, BadBody) as exc:
            error = self._error(exc, where)
            wire, remembered = WIRES.recall(where.base_url, self.app.model)
            evidence = {**wire.evidence(remembered=remembered), "contract": contract or ""}
            error.calls = [
                call_evidence(
                    error,
                    attempt=number,
                    where=where,
                    prompt=build(wire),
                    codes=codes,
                    latency_ms=(time.perf_counter() - started) * 1000,
                    wire=evidence,
                )
            ]
            raise error from exc
        completion: Completion = sent.parsed
        call = model_reply(
            sent,
            attempt=number,
            where=where,
            prompt=request,
            response_id=completion.response_id,
            response_model=completion.response_model,
            finish_reason=completion.finish_reason,
            usage=(completion.input_tokens, completion.output_tokens),
            codes=codes,
            wire={
                **wire.evidence(remembered=remembered),
                "contract": contract or "",
                "streamed": completion.streamed,
                "first_token_ms": completion.first_token_ms,
            },
        )
        if completion.refusal or completion.finish_reason == "content_filter":
            error = ModelError(
                f"the model {self.app.model!r} refused to answer: "
                f"{completion.refusal or 'its content filter stopped the reply'}",
                code="model_refused",
            )
            error.calls = [call]
            raise error
        return call, completion.content

    def attempt(self, messages: Any, passages: Any, number: int, codes: tuple[str, ...]) -> Attempt:
        conversation: Conversation = messages
        watcher = ReplyWatcher(conversation.contract, passages, self.feed(number))
        call, content = self.exchange(
            conversation.messages,
            contract=conversation.contract,
            number=number,
            codes=codes,
            on_text=watcher if listening() else None,
        )
        return self._read(call, content, passages, conversation.contract, number)

    def _error(self, exc: Exception, where: Where) -> ModelError:
        if isinstance(exc, ModelError):
            return exc
        at = f"openai at {where.base_url}"
        if isinstance(exc, ReplyTimeout):
            return timeout_error(exc, at)
        return ModelError(
            f"{at} sent a reply that is not a chat completion: {exc}", code="model_bad_response"
        )

    def _read(self, call: Any, content: str, passages: Any, contract: str, number: int) -> Attempt:
        data, problems = contract_read(content, contract)
        if data is None:
            return Attempt(call, content, None, problems)
        if isinstance(data.get("error"), str) and data["error"] and not data.get("answer"):
            error = {"error": data["error"], "fix": str(data.get("fix") or "")}
            return Attempt(call, content, [], model_error=error)
        late = "citations_after_answer" in problems and number > 1
        return Attempt(
            call,
            content,
            contract_checks(data, passages, contract=contract, late=late),
            problems,
            delta_s=_number(data.get("ΔS")),
            lambda_state=str(data.get("λ") or "")[:40],
        )


def prompt_hash(request: Mapping[str, Any]) -> str:
    return sha256_json(request)
