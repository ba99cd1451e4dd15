"""What an OpenAI-compatible server accepts, found out by asking and remembered.

Servers that speak Chat Completions accept different subsets of it: OpenAI takes
``response_format: json_schema`` and ``max_completion_tokens``; llama-cpp-python
refuses ``json_schema`` with a 500 whose body is a validation error; Ollama and
vLLM each differ again. The generator asks for the strongest form first and steps
down one parameter at a time when the server refuses it, recognising a refusal by
its status (400, 404, 422, or a 500 whose body names a parameter or a validation
error) and its words, never by retrying it. What a (base URL, model) accepts is
remembered for the process, so a refusal is paid once per server and model; the
record of it goes into each model call's evidence.
"""

from __future__ import annotations

import re
import threading
from dataclasses import asdict, dataclass, field, replace
from typing import Any

# structured output, strongest first: a JSON schema (OpenAI, vLLM, Ollama, llama.cpp's
# llama-server); JSON mode constrained by a schema (llama-cpp-python's own form, which
# refuses json_schema); JSON mode; "none" = the contract in the prompt alone
RESPONSE_FORMATS = ("json_schema", "json_object_schema", "json_object", "none")
# how the reply length is bounded: the classic name, OpenAI's newer one, or not at all
LENGTH_PARAMETERS = ("max_tokens", "max_completion_tokens", "none")
# the contract forms a model answers in: nested (citations, then sentences citing
# them by index) and flat (one object per sentence with its snippet and quote)
CONTRACTS = ("nested", "flat")

# words of a refusal of a parameter, as servers word them ("Unsupported parameter",
# "Extra inputs are not permitted", "Input should be 'text' or 'json_object'", …)
REFUSAL_WORDS = (
    "unsupported",
    "not supported",
    "does not support",
    "unknown",
    "unrecognized",
    "unrecognised",
    "extra inputs",
    "extra fields",
    "not permitted",
    "not allowed",
    "invalid",
    "input should be",
    "validation",
    "unexpected",
)
# the statuses a refusal comes with; a 500 counts only when its body says what it refused
REFUSAL_STATUSES = frozenset({400, 404, 422})


@dataclass(frozen=True)
class Wire:
    """The request parameters a server is asked with, and what it refused so far."""

    response_format: str = RESPONSE_FORMATS[0]
    stream: bool = True
    temperature: bool = True
    length: str = LENGTH_PARAMETERS[0]
    seed: bool = True
    contract: str = CONTRACTS[0]
    refused: tuple[str, ...] = field(default=())

    def evidence(self, *, remembered: bool) -> dict[str, Any]:
        """What a model call records of the negotiation."""
        return {**asdict(self), "refused": list(self.refused), "remembered": remembered}


# each parameter a refusal can name, the words that name it in an error body, and the
# Wire after stepping it down (None: nothing weaker to step to)
_NAMES: dict[str, re.Pattern[str]] = {
    "response_format": re.compile(r"response_format|json_schema|json_object|\bschema\b"),
    "stream": re.compile(r"\bstream(ing)?\b"),
    "temperature": re.compile(r"\btemperature\b"),
    "length": re.compile(r"\bmax_(completion_)?tokens\b"),
    "seed": re.compile(r"\bseed\b"),
}


def _weaker(wire: Wire, parameter: str) -> Wire | None:
    if parameter == "response_format":
        place = RESPONSE_FORMATS.index(wire.response_format)
        if place + 1 < len(RESPONSE_FORMATS):
            return replace(wire, response_format=RESPONSE_FORMATS[place + 1])
        return None
    if parameter == "length":
        place = LENGTH_PARAMETERS.index(wire.length)
        if place + 1 < len(LENGTH_PARAMETERS):
            return replace(wire, length=LENGTH_PARAMETERS[place + 1])
        return None
    if parameter == "stream" and wire.stream:
        return replace(wire, stream=False)
    if parameter == "temperature" and wire.temperature:
        return replace(wire, temperature=False)
    if parameter == "seed" and wire.seed:
        return replace(wire, seed=False)
    return None


def _sent(wire: Wire, parameter: str) -> bool:
    """Whether a request under ``wire`` carries ``parameter`` at all."""
    if parameter == "response_format":
        return wire.response_format != "none"
    if parameter == "length":
        return wire.length != "none"
    return bool(getattr(wire, parameter))


def refusal_step(wire: Wire, *, status: int, body: str) -> Wire | None:
    """The weaker Wire to ask with when ``status``/``body`` refuse a parameter that
    ``wire`` sent; None when the error is not such a refusal (it is then an error)."""
    said = body.lower()
    worded = any(word in said for word in REFUSAL_WORDS)
    if not worded or not (status in REFUSAL_STATUSES or status >= 500):
        return None
    named = [p for p, pattern in _NAMES.items() if _sent(wire, p) and pattern.search(said)]
    if not named and status in (422, 500) and _sent(wire, "response_format"):
        named = ["response_format"]  # a validation error naming nothing: the likeliest
    # the length field is named by many errors about other things ("max_tokens is too
    # large" is a bad value, not a refusal): it is stepped only when nothing else is named
    ordered = [p for p in named if p != "length"] or named
    for parameter in ordered:
        if parameter == "length" and not re.search(r"unsupported|\buse\b|not supported", said):
            continue
        weaker = _weaker(wire, parameter)
        if weaker is not None:
            label = _label(wire, parameter)
            return replace(weaker, refused=(*wire.refused, f"{label} ({status})"))
    return None


def _label(wire: Wire, parameter: str) -> str:
    if parameter == "response_format":
        return f"response_format={wire.response_format}"
    if parameter == "length":
        return wire.length
    return parameter


class WireMemory:
    """What each (base URL, model) accepted, for this process."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, str], Wire] = {}
        self._lock = threading.Lock()

    def recall(self, base_url: str, model: str) -> tuple[Wire, bool]:
        """The remembered Wire (and True), or the strongest one (and False)."""
        with self._lock:
            known = self._known.get((base_url, model))
        return (known, True) if known is not None else (Wire(), False)

    def remember(self, base_url: str, model: str, wire: Wire) -> None:
        with self._lock:
            self._known[(base_url, model)] = wire

    def forget(self) -> None:
        with self._lock:
            self._known.clear()


WIRES = WireMemory()
