"""What the model generators share: API keys from the environment, time limits, one
request with retries (with backoff, for 429, 5xx and failed connections only; a
refusal of a parameter is raised at once, for the caller to step down), provider
errors turned into :class:`ModelError` with a message that says what to fix, and the
evidence of each call (prompt and raw reply, hashed).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

import httpx2
from django.conf import settings

from citations.generators import ClaimCheck, Generation, ModelError, ModelReply
from citations.generators.live import SentenceFeed, live_kept, live_restart
from provenance_site.env import env_str


@dataclass(frozen=True)
class Timeouts:
    """Seconds to connect, to the first token of the reply, and for the whole reply."""

    connect: float
    first_token: float
    total: float

    def httpx_timeout(self, *, streamed: bool) -> httpx2.Timeout:
        # a streamed reply's reads wait at most until the first token is due; a whole
        # body may take the whole time
        read = min(self.first_token, self.total) if streamed else self.total
        return httpx2.Timeout(read, connect=self.connect, write=self.connect, pool=self.connect)


def timeouts_for(app: Any) -> Timeouts:
    """The app's model time limits, each falling back to the environment's."""
    return Timeouts(
        connect=float(app.model_connect_seconds or settings.PROVENANCE_LLM_CONNECT_TIMEOUT_SECONDS),
        first_token=float(
            app.model_first_token_seconds or settings.PROVENANCE_LLM_FIRST_TOKEN_SECONDS
        ),
        total=float(app.model_timeout_seconds or settings.PROVENANCE_LLM_TIMEOUT_SECONDS),
    )


# a Retry-After longer than this is not waited for: the caller gets the error at once
MAX_RETRY_AFTER_SECONDS = 30.0


def api_key(name: str, provider: str) -> str:
    """``NAME`` or the file ``NAME_FILE`` names; a clear error when neither is set."""
    try:
        key = env_str(name)
    except OSError as exc:
        raise ModelError(
            f"cannot read {name}_FILE: {exc}", code="model_not_configured", status=503
        ) from exc
    if not key:
        raise ModelError(
            f"{name} (or {name}_FILE) is not set: the app's {provider} generator needs an API "
            "key (a local server that takes none accepts any value, e.g. 'local')",
            code="model_not_configured",
            status=503,
        )
    return key


def sha256_json(value: object) -> str:
    """The hash of a prompt: its canonical JSON (sorted keys, compact)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def storable(text: str) -> str:
    """PostgreSQL text cannot hold NUL: a model's reply could."""
    return text.replace("\x00", "\ufffd")


@dataclass(frozen=True)
class Sent:
    """A parsed reply, its HTTP body, and how it went."""

    parsed: Any
    raw_text: str
    latency_ms: float
    retries: int


def _backoff(retries: int, exc: Exception) -> float:
    """Retry-After if the server gave one (capped), else exponential from the setting."""
    response = getattr(exc, "response", None)
    header = response.headers.get("retry-after") if response is not None else None
    try:
        wait = float(header) if header else None
    except ValueError:
        wait = None
    if wait is None:
        wait = settings.PROVENANCE_LLM_BACKOFF_SECONDS * (2**retries)
    return min(max(wait, 0.0), MAX_RETRY_AFTER_SECONDS)


def _retryable(exc: Exception, sdk: ModuleType) -> bool:
    """429 and 5xx are retried; a timeout is not: a model that did not answer within its
    limit will not answer within the next one either (the limits are long, and set)."""
    if isinstance(exc, sdk.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return isinstance(exc, sdk.APIConnectionError) and not isinstance(exc, sdk.APITimeoutError)


def raw_reply(raw: Any) -> tuple[Any, str]:
    """An SDK's ``with_raw_response`` reply as what it parses to and its HTTP body."""
    return raw.parse(), raw.http_response.text


class Refused(Exception):
    """The server refused a parameter of the request; ``step`` is what to ask with next."""

    def __init__(self, step: Any) -> None:
        super().__init__(str(step))
        self.step = step


def send(
    call: Callable[[], Any],
    *,
    sdk: ModuleType,
    where: Where,
    refusal: Callable[[Exception], Any] | None = None,
) -> Sent:
    """``call()`` with retries on 429, 5xx and connection failures; ``call`` returns the
    reply read and its HTTP body (:func:`raw_reply` for a ``with_raw_response`` one). A
    refusal (``refusal(exc)`` not None) is raised as :class:`Refused` at once: it is an
    answer about the request, not a transient."""
    started, retries = time.perf_counter(), 0
    while True:
        try:
            parsed, text = call()
            return Sent(parsed, text, (time.perf_counter() - started) * 1000, retries)
        except sdk.APIError as exc:
            step = refusal(exc) if refusal is not None else None
            if step is not None:
                raise Refused(step) from exc
            if _retryable(exc, sdk) and retries < settings.PROVENANCE_LLM_MAX_RETRIES:
                time.sleep(_backoff(retries, exc))
                retries += 1
                continue
            raise model_error(exc, sdk=sdk, where=where, tries=retries + 1) from exc


@dataclass(frozen=True)
class Where:
    """Who was asked: for messages that say what to fix."""

    provider: str
    model: str
    base_url: str
    key_name: str
    timeout_seconds: float = 0.0


def _upstream_message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return error["message"]
        if isinstance(error, str):
            return error
    return str(getattr(exc, "message", exc))


def model_error(exc: Exception, *, sdk: ModuleType, where: Where, tries: int) -> ModelError:
    """A provider's failure as a :class:`ModelError` naming the cause and the fix."""
    at = f"{where.provider} at {where.base_url}"
    if isinstance(exc, sdk.APITimeoutError):
        seconds = where.timeout_seconds or settings.PROVENANCE_LLM_TIMEOUT_SECONDS
        return ModelError(
            f"{at} did not answer within {seconds:g} s ({tries} tries; raise the app's "
            "model timeout or PROVENANCE_LLM_TIMEOUT_SECONDS for a slow model)",
            code="model_timeout",
            status=504,
        )
    if isinstance(exc, sdk.APIConnectionError):
        return ModelError(f"cannot reach {at}: {exc}", code="model_unreachable")
    status = getattr(exc, "status_code", 0)
    said = _upstream_message(exc)
    if status == 401:
        return ModelError(
            f"{at} refused the API key (401: {said}); check {where.key_name}",
            code="model_auth_failed",
        )
    if status == 403:
        return ModelError(f"{at} refused access (403: {said})", code="model_forbidden")
    if status == 404:
        return ModelError(
            f"{at} does not know the model {where.model!r} (404: {said}); check the app's model",
            code="model_not_found",
        )
    if status == 429:
        return ModelError(
            f"{at} is rate-limiting this key (429 after {tries} tries: {said}); retry later",
            code="model_rate_limited",
            status=503,
        )
    if status >= 500:
        return ModelError(
            f"{at} failed ({status} after {tries} tries: {said}); retry later",
            code="model_unavailable",
        )
    return ModelError(f"{at} rejected the request ({status}: {said})", code="model_bad_request")


def model_reply(
    sent: Sent,
    *,
    attempt: int,
    where: Where,
    prompt: Mapping[str, Any],
    response_id: str,
    response_model: str,
    finish_reason: str,
    usage: tuple[int | None, int | None],
    codes: tuple[str, ...],
    wire: Mapping[str, Any] | None = None,
) -> ModelReply:
    return replace(
        call_evidence(
            None,
            attempt=attempt,
            where=where,
            prompt=prompt,
            codes=codes,
            latency_ms=sent.latency_ms,
            wire=wire,
        ),
        raw_response=storable(sent.raw_text),
        response_id=response_id or "",
        response_model=response_model or "",
        finish_reason=finish_reason or "",
        input_tokens=usage[0],
        output_tokens=usage[1],
        transport_retries=sent.retries,
    )


def call_evidence(
    error: ModelError | None,
    *,
    attempt: int,
    where: Where,
    prompt: Mapping[str, Any],
    codes: tuple[str, ...],
    latency_ms: float,
    wire: Mapping[str, Any] | None = None,
) -> ModelReply:
    """The evidence of a request: what was sent, and why it gave no reply to read
    (``error``; :func:`model_reply` fills in the reply of one that gave one)."""
    return ModelReply(
        attempt=attempt,
        provider=where.provider,
        model=where.model,
        base_url=where.base_url,
        prompt=prompt,
        raw_response="",
        latency_ms=latency_ms,
        contract_codes=codes,
        wire=dict(wire or {}),
        error=storable(f"{error.code}: {error.message}") if error is not None else "",
    )


@dataclass(frozen=True)
class Attempt:
    """One reply, read and verified: ``checks`` is None when the reply could not be read
    at all (``problems`` say why); ``to_fix`` is what a retry asks the model to fix."""

    call: ModelReply
    reply_text: str
    checks: list[ClaimCheck] | None
    problems: tuple[str, ...] = ()
    delta_s: float | None = None
    lambda_state: str = ""
    model_error: Mapping[str, str] | None = None

    def to_fix(self, ignored: frozenset[str] = frozenset()) -> list[str]:
        if self.model_error is not None:
            return []
        lines = list(self.problems)
        for check in self.checks or []:
            if not check.supported and check.reason not in ignored:
                cited = f" citing {check.snippet_id!r}" if check.snippet_id else ""
                lines.append(f"sentence {check.sentence + 1}{cited}: {check.reason}")
        return lines


DEFAULT_SYSTEM = "You answer questions about a company's documents, briefly and exactly."


class TwoAttempts:
    """A model answer with one retry: when the first reply breaks the contract or a
    citation fails verification, the model is told the codes once; then whatever still
    fails is recorded as unsupported. A reply that cannot be read twice is an error."""

    # reasons that do not call for the retry
    not_retried: frozenset[str] = frozenset()
    app: Any

    def model_required(self) -> str:
        """The app's model; an app set to a model generator without one is an error."""
        if not self.app.model:
            raise ModelError(
                f"the app {self.app.name!r} has no model: set one in the admin or with "
                "create_app --model",
                code="model_not_configured",
                status=503,
            )
        return self.app.model

    def system_prompt(self, instructions: str | None) -> str:
        """A run's instructions replace the app's system prompt; else the app's, or ours."""
        system = instructions if instructions is not None else self.app.prompt
        return system or DEFAULT_SYSTEM

    def first_messages(self, question: str, passages: Any, instructions: str | None) -> Any:
        raise NotImplementedError

    def retry_messages(self, messages: Any, first: Attempt, to_fix: list[str]) -> Any:
        raise NotImplementedError

    def attempt(self, messages: Any, passages: Any, number: int, codes: tuple[str, ...]) -> Attempt:
        raise NotImplementedError

    def answer(
        self, *, question: str, passages: Any, instructions: str | None = None
    ) -> Generation:
        """The verified answer; a live listener (:mod:`citations.generators.live`) is shown
        its sentences as they verify, and told to restart when another reply is kept or
        the model fails (the app may then fall back)."""
        try:
            return self._answer(question, passages, instructions)
        except ModelError:
            live_restart("model_error")
            raise

    def _answer(self, question: str, passages: Any, instructions: str | None) -> Generation:
        messages = self.first_messages(question, passages, instructions)
        first = self.attempt(messages, passages, 1, ())
        to_fix = first.to_fix(self.not_retried)
        if first.checks is not None and not to_fix:
            live_kept(1, first.checks)
            return _generation(first, [first])
        live_restart("retry")
        retry = self.retry_messages(messages, first, to_fix)
        try:
            second = self.attempt(retry, passages, 2, tuple(to_fix))
        except ModelError as exc:
            if first.checks is None:
                exc.calls = [first.call, *exc.calls]
                raise
            # the retry failed on the wire: the first reply, read and verified, stands
            live_kept(1, first.checks)
            return replace(_generation(first, [first]), calls=[first.call, *exc.calls])
        self.attempts_read(first, second)
        kept = second if second.checks is not None else first
        if kept.checks is None:
            error = _unreadable(second)
            error.calls = [first.call, second.call]
            raise error
        live_kept(1 if kept is first else 2, kept.checks)
        return _generation(kept, [first, second])

    def feed(self, number: int) -> SentenceFeed:
        """What shows the sentences of reply ``number`` as they verify."""
        return SentenceFeed(number, last=number > 1, ignored=self.not_retried)

    def attempts_read(self, first: Attempt, second: Attempt) -> None:
        """What a generator learns from a retry (the OpenAI one: which contract works)."""


def _unreadable(attempt: Attempt) -> ModelError:
    where = f"{attempt.call.provider} model {attempt.call.model!r}"
    if "empty_reply" in attempt.problems:
        return ModelError(f"the {where} gave an empty reply, twice", code="model_empty_reply")
    return ModelError(
        f"the {where} did not reply in the citation contract's JSON, twice "
        f"({', '.join(attempt.problems)})",
        code="model_invalid_reply",
    )


def _generation(kept: Attempt, attempts: list[Attempt]) -> Generation:
    from citations.generators.verify import claims_of

    checks = kept.checks or []
    return Generation(
        claims=claims_of(checks),
        checks=checks,
        calls=[a.call for a in attempts],
        checked_call=attempts.index(kept),
        delta_s=kept.delta_s,
        lambda_state=kept.lambda_state,
        model_error=kept.model_error,
    )


FIX_REQUEST = (
    "Your reply broke the citation contract. The verifier returned these codes:\n{codes}\n"
    "Reply again, following the contract exactly: quote the snippets verbatim, copy the "
    "citation fields exactly as given, cite only snippets you were given, and leave out "
    "any sentence you cannot support."
)
