"""Verified sentences as a model writes them, for whoever streams the answer.

A model's reply streams in for tens of seconds on a small local model; the page and
the threads/Responses streams show each sentence once it is complete *and* verified
(DESIGN invariant 9: nothing unverified is ever shown numbered). The generators read
the reply as it arrives and report here; what is stored is still made from the whole
reply, exactly as without a listener, so a listener only sees it earlier.

A reply's sentences are reported while nothing in it has failed yet (a failure means
the model is asked again, and its first reply may not be the one kept) and, in the
model's last try, each one that verifies. When sentences were reported and the reply
kept turns out to be another one (a retry, the extractive fallback), the listener is
told to ``restart``: what it showed is not the answer. The listener is set per thread
of execution (a context variable), so nothing between the stream and the generator
passes it along.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections

from citations.generators import Claim, ClaimCheck
from citations.generators.verify import claims_of


@dataclass(frozen=True)
class LiveSentence:
    """One verified sentence of reply ``attempt``: its claims (one per passage it cites,
    as the stored answer will hold them)."""

    attempt: int
    claims: tuple[Claim, ...]


@dataclass(frozen=True)
class Restart:
    """What was reported is not the answer: the model is asked again, or the answer will
    be another generator's (``reason``)."""

    reason: str


LiveEvent = LiveSentence | Restart
T = TypeVar("T")
Listener = Callable[[LiveEvent], None]

_LISTENER: contextvars.ContextVar[Listener | None] = contextvars.ContextVar(
    "provenance_live_listener", default=None
)
# what the current listener was shown: the reply and its sentences, so a restart is
# said only when something was shown, and a kept reply shows only what it has not yet
_SHOWN: contextvars.ContextVar[tuple[int, tuple[LiveSentence, ...]]] = contextvars.ContextVar(
    "provenance_live_shown", default=(0, ())
)


@contextmanager
def live_listen(listener: Listener) -> Iterator[None]:
    """Report the verified sentences of the answers made inside this block."""
    token, shown = _LISTENER.set(listener), _SHOWN.set((0, ()))
    try:
        yield
    finally:
        _SHOWN.reset(shown)
        _LISTENER.reset(token)


def _show(listener: Listener, sentence: LiveSentence) -> None:
    attempt, shown = _SHOWN.get()
    shown = shown if attempt == sentence.attempt else ()
    _SHOWN.set((sentence.attempt, (*shown, sentence)))
    listener(sentence)


def live_restart(reason: str) -> None:
    """Tell the listener that what it was shown is not the answer (if it was shown any)."""
    listener = _LISTENER.get()
    if listener is not None and _SHOWN.get()[1]:
        _SHOWN.set((0, ()))
        listener(Restart(reason))


def live_kept(attempt: int, checks: Sequence[ClaimCheck]) -> None:
    """Reply ``attempt`` is the answer: the listener is shown what it was not shown of it
    yet (all of it, after a restart, when what it was shown is not where it starts)."""
    listener = _LISTENER.get()
    if listener is None:
        return
    by_sentence: dict[int, list[ClaimCheck]] = {}
    for check in checks:
        by_sentence.setdefault(check.sentence, []).append(check)
    kept = [LiveSentence(attempt, tuple(claims_of(c))) for c in by_sentence.values()]
    kept = [sentence for sentence in kept if sentence.claims]
    shown = _SHOWN.get()[1]
    if _SHOWN.get()[0] != attempt or tuple(kept[: len(shown)]) != shown:
        live_restart("kept")
        shown = ()
    for sentence in kept[len(shown) :]:
        _show(listener, sentence)


class SentenceFeed:
    """Reports the sentences of one reply as their checks come in, in reply order.

    ``last`` says whether this is the model's last try: in the first, the first failed
    check (one whose reason asks for a retry, not one of ``ignored``) ends the reports;
    in the last, failed sentences are skipped, as the stored answer skips them."""

    def __init__(self, attempt: int, *, last: bool, ignored: frozenset[str] = frozenset()):
        self.attempt, self.last, self.ignored = attempt, last, ignored
        self.seen = 0  # sentences read so far
        self.stopped = False

    def add(self, checks: Sequence[ClaimCheck]) -> None:
        """The checks of the reply's next sentence (every citation of it)."""
        self.seen += 1
        listener = _LISTENER.get()
        if listener is None or self.stopped or not checks:
            return
        failed = [c for c in checks if not c.supported and c.reason not in self.ignored]
        if failed and not self.last:
            self.stopped = True
            return
        claims = claims_of(checks)
        if claims:
            _show(listener, LiveSentence(self.attempt, tuple(claims)))

    def stop(self) -> None:
        """Nothing more of this reply is reported (it broke the contract)."""
        self.stopped = True


def listening() -> bool:
    return _LISTENER.get() is not None


@dataclass(frozen=True)
class Finished(Generic[T]):
    """The answer made while its sentences were reported."""

    value: T


def live_events(call: Callable[[], T]) -> Iterator[LiveEvent | Finished[T]]:
    """Runs ``call`` (which answers a question) on a thread of its own and yields the
    verified sentences reported meanwhile, then :class:`Finished` with what it returned
    (what it raised is raised here). The thread uses this thread's database connection,
    one at a time (this one only waits), so the answer is made in the same transaction
    as without a stream; a caller that stops reading still waits for the answer."""
    events: queue.SimpleQueue[LiveEvent | None] = queue.SimpleQueue()
    connection = connections[DEFAULT_DB_ALIAS]
    outcome: list[T] = []
    failure: list[BaseException] = []

    def work() -> None:
        connections[DEFAULT_DB_ALIAS] = connection
        try:
            with live_listen(events.put):
                outcome.append(call())
        except BaseException as exc:  # raised again in the caller's thread
            failure.append(exc)
        finally:
            events.put(None)

    connection.inc_thread_sharing()
    worker = threading.Thread(target=work, name="live-answer", daemon=True)
    worker.start()
    try:
        while (event := events.get()) is not None:
            yield event
    finally:
        worker.join()
        connection.dec_thread_sharing()
    if failure:
        raise failure[0]
    yield Finished(outcome[0])
