"""The client's User-Agent header as recorded evidence: what an officer reads later.

The header is the client's to write, so it is kept as text to read, never trusted
or interpreted: cut to a length a person reads, and every character that would not
show as itself replaced by U+FFFD. That is the control characters (a NUL PostgreSQL
refuses, escape sequences that repaint a terminal reading an export), the invisible
formatting characters (a bidi override reorders what follows it on screen) and
unpaired surrogates (not encodable). HTML stays as written: pages escape it.
"""

from __future__ import annotations

import unicodedata

MAX_USER_AGENT_CHARS = 500  # a header is the client's to write: keep what a person reads
SHORT_USER_AGENT_CHARS = 60  # in a list column; the record's page shows it whole

_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs"})


def user_agent_clean(raw: str | None) -> str:
    """``raw`` as stored: hidden characters shown as U+FFFD, at most
    :data:`MAX_USER_AGENT_CHARS` long; "" for no header."""
    if not raw:
        return ""
    shown = "".join(
        "\ufffd" if unicodedata.category(ch) in _HIDDEN_CATEGORIES else ch for ch in raw
    )
    return shown[:MAX_USER_AGENT_CHARS]


def command_user_agent(command: str) -> str:
    """The agent recorded for what a management command does: ``manage.py <command>``."""
    return f"manage.py {command}"


def user_agent_short(agent: str) -> str:
    """``agent`` cut for a list column, an ellipsis saying so."""
    if len(agent) <= SHORT_USER_AGENT_CHARS:
        return agent
    return agent[: SHORT_USER_AGENT_CHARS - 1] + "\u2026"
