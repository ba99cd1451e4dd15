"""Readers' feedback on answers: recorded as evidence, chained like the answer."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction

from audit.ledger import ledger_append
from citations.models import AnswerFeedback, FeedbackRating, QueryExecution

MAX_COMMENT_CHARS = 2000


class FeedbackRejected(ValueError):
    """The feedback cannot be recorded; ``message`` says why, for the reader."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@transaction.atomic
def feedback_record(
    *, execution: QueryExecution, user: User | AnonymousUser, rating: str, comment: str = ""
) -> AnswerFeedback:
    """Record ``user``'s verdict on ``execution`` and chain it in the audit ledger."""
    if rating not in FeedbackRating.values:
        raise FeedbackRejected("Choose helpful or not helpful.")
    comment = comment.strip()
    if len(comment) > MAX_COMMENT_CHARS:
        raise FeedbackRejected(f"The comment is longer than {MAX_COMMENT_CHARS} characters.")
    feedback = AnswerFeedback.objects.create(
        query=execution,
        organization_id=execution.organization_id,
        rating=rating,
        comment=comment,
        caller_user=user if isinstance(user, User) else None,  # the user model is auth.User
        caller=user.get_username(),
    )
    ledger_append([feedback])
    return feedback


def feedback_latest(*, execution: QueryExecution, user: User) -> AnswerFeedback | None:
    """The user's latest verdict on the answer, if any."""
    return (
        AnswerFeedback.objects.filter(query=execution, caller_user=user)
        .order_by("-created_at", "-id")
        .first()
    )
