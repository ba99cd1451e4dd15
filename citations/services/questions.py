"""What a question must be to be answered: cleaned, or refused before anything
is recorded."""

from __future__ import annotations

from core.exceptions import DomainRejected
from documents.storable_text import unstorable_character

MAX_QUESTION_CHARS = 2000


class QueryRejected(DomainRejected):
    """A question refused before anything is recorded; it names the ``query`` field."""

    default_param = "query"


def question_clean(question: object) -> str:
    if not isinstance(question, str):
        raise QueryRejected("'query' must be a string", code="invalid_query")
    cleaned = question.strip()
    if not cleaned:
        raise QueryRejected("'query' must not be empty", code="empty_query")
    problem = unstorable_character(cleaned)
    if problem:  # a web form or the command line can send what JSON parsing refuses
        raise QueryRejected(
            f"'query' holds {problem}, which cannot be stored as text", code="unstorable_text"
        )
    if len(cleaned) > MAX_QUESTION_CHARS:
        raise QueryRejected(
            f"'query' is longer than {MAX_QUESTION_CHARS} characters", code="query_too_long"
        )
    return cleaned
