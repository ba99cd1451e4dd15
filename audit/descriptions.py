"""The audit trail's entries in plain words, each with the admin page of the
record it is about: "answer to “How long are invoices kept?” cited 2 sources",
"upload of report.pdf revision 2 by alice".

A page of entries is described in one query whatever its length and however
many tables it names: it reads the few columns each sentence needs, and the
answer each row belongs to, from every table at once (a ``UNION ALL``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.apps import apps
from django.db.models import Count, F, Model, OuterRef, QuerySet, Subquery, TextField, Value
from django.db.models.functions import Cast, Coalesce
from django.urls import NoReverseMatch, reverse

from audit.ledger import CHAINED_MODELS, SEAL_TABLE
from audit.models import EvidenceEntry

QUESTION_SHOWN = 60  # characters of a question quoted in a sentence
COLUMNS = 6  # the most columns a sentence reads (a document event's)


@dataclass(frozen=True)
class EntryDescription:
    """What an entry is about, in words, and where that record is shown ("" nowhere)."""

    text: str
    url: str = ""


@dataclass(frozen=True)
class Answer:
    """The answer a row of evidence is or belongs to, as its sentence names it."""

    id: uuid.UUID
    question: str
    cited: int

    @property
    def words(self) -> str:
        question = self.question.strip()
        if len(question) > QUESTION_SHOWN:
            question = question[:QUESTION_SHOWN].rstrip() + "…"
        return f"answer to “{question}”"

    def url(self, fragment: str = "") -> str:
        return _admin_url("citations.QueryExecution", self.id) + fragment


@dataclass(frozen=True)
class Record:
    """The columns of one chained row its sentence reads, as text, and its answer."""

    table: str
    id: str
    answer: Answer | None
    values: tuple[str, ...]


Sentence = Callable[[Sequence[str], Answer | None], EntryDescription]


@dataclass(frozen=True)
class Told:
    """How rows of one model are told: the columns read, then the sentence."""

    columns: tuple[str, ...]
    sentence: Sentence


def _admin_url(label: str, pk: object) -> str:
    app_label, model = label.lower().split(".")
    try:
        return reverse(f"admin:{app_label}_{model}_change", args=[pk])
    except NoReverseMatch:  # a model the admin does not show
        return ""


def _sources(count: int) -> str:
    return "no source" if count == 0 else f"{count} source{'s' if count != 1 else ''}"


def _of(answer: Answer | None) -> str:
    return f"the {answer.words}" if answer else "an answer no longer found"


def _part(what: str, answer: Answer | None, fragment: str = "") -> EntryDescription:
    """A row of an answer: what it is, then whose, linked to the answer's evidence page."""
    return EntryDescription(f"{what} {_of(answer)}", answer.url(fragment) if answer else "")


def _execution(values: Sequence[str], answer: Answer | None) -> EntryDescription:
    if answer is None:
        return EntryDescription("an answer no longer found")
    return EntryDescription(f"{answer.words} cited {_sources(answer.cited)}", answer.url())


def _hit(values: Sequence[str], answer: Answer | None) -> EntryDescription:
    k_pos, name = values[:2]
    return _part(f"retrieval hit #{k_pos} ({name}) for", answer, f"#hit-{k_pos}")


def _quoted(values: Sequence[str], answer: Answer | None) -> EntryDescription:
    quoted_as, name, revision = values[:3]
    what = f"source [{quoted_as}] {name} revision {revision} quoted in"
    return _part(what, answer, f"#source-{quoted_as}")


def _feedback(values: Sequence[str], answer: Answer | None) -> EntryDescription:
    rating = values[0].replace("_", " ")
    return _part(f"feedback “{rating}” on", answer)


# a new revision is an upload too; the revision number says which
_EVENT_WORDS = {"revision": "upload"}


def _document_event(values: Sequence[str], answer: Answer | None) -> EntryDescription:
    kind, name, revision, actor, reason, file_id = values[:6]
    text = f"{_EVENT_WORDS.get(kind, kind)} of {name} revision {revision} by {actor}"
    text += f" ({reason})" if reason else ""
    return EntryDescription(text, _admin_url("documents.File", file_id))


def _evaluation_run(values: Sequence[str], answer: Answer | None) -> EntryDescription:
    app, gold, started_by, run_id = values[:4]
    text = f"evaluation of {app} with {gold}, started by {started_by}"
    return EntryDescription(text, _admin_url("evaluation.EvaluationRun", run_id))


def _evaluation_item(values: Sequence[str], answer: Answer | None) -> EntryDescription:
    position, gold, run_id = values[:3]
    text = f"question {position} of the evaluation with {gold}"
    return EntryDescription(text, _admin_url("evaluation.EvaluationRun", run_id))


def _evaluation_outcome(values: Sequence[str], answer: Answer | None) -> EntryDescription:
    gold, status, run_id = values[:3]
    return EntryDescription(
        f"evaluation with {gold} {status}", _admin_url("evaluation.EvaluationRun", run_id)
    )


_TOLD: dict[str, Told] = {
    "citations.QueryExecution": Told((), _execution),
    "citations.RetrievalHit": Told(("k_pos", "file__name"), _hit),
    "citations.QuotedSource": Told(("quoted_as", "document_name", "file_revision"), _quoted),
    "citations.ClaimCitation": Told(("segment",), lambda v, a: _part(f"claim {v[0]} of", a)),
    "citations.AnswerFeedback": Told(("rating",), _feedback),
    "audit.DocumentEvent": Told(
        ("kind", "file__name", "file__revision", "actor", "reason", "file_id"), _document_event
    ),
    "evaluation.EvaluationRun": Told(
        ("app__name", "gold_name", "started_by_label", "id"), _evaluation_run
    ),
    "evaluation.EvaluationItem": Told(("position", "run__gold_name", "run_id"), _evaluation_item),
    "evaluation.EvaluationOutcome": Told(
        ("run__gold_name", "status", "run_id"), _evaluation_outcome
    ),
}


def _told(model: type[Model]) -> Told:
    """A model without its own sentence (model calls, traces, steps): its name and answer."""
    if model._meta.label in _TOLD:
        return _TOLD[model._meta.label]
    name = str(model._meta.verbose_name)
    return Told((), lambda values, answer: _part(f"{name} of", answer))


def _answer_column(model: type[Model]) -> str | None:
    """The column naming the answer a row is or belongs to (an evaluation's question,
    which has one too, is told as part of its run instead)."""
    if model._meta.label == "citations.QueryExecution":
        return "pk"
    if model._meta.app_label == "citations" and any(f.name == "query" for f in model._meta.fields):
        return "query_id"
    return None


def entries_described(entries: Sequence[EvidenceEntry]) -> dict[int, EntryDescription]:
    """Each entry's description, keyed by ``seq``."""
    records = _records(entries)
    return {
        entry.seq: _described(entry, records.get((entry.record_table, entry.record_id)))
        for entry in entries
    }


def _described(entry: EvidenceEntry, record: Record | None) -> EntryDescription:
    if record is None:
        if entry.record_table == SEAL_TABLE:
            return EntryDescription("seal: the entries before it were chained without a key")
        return EntryDescription(f"{entry.record_table} {entry.record_id} (record not found)")
    told = _told(_models_by_table()[record.table])
    return told.sentence(record.values, record.answer)


def _models_by_table() -> dict[str, type[Model]]:
    chained = [apps.get_model(label) for label in CHAINED_MODELS]
    return {model._meta.db_table: model for model in chained}


def _text(expression: str | Value) -> Cast:
    return Cast(expression if isinstance(expression, Value) else F(expression), TextField())


def _answer_columns(model: type[Model]) -> dict[str, Cast]:
    """The answer a row is or belongs to: its id, question and number of sources."""
    column = _answer_column(model)
    if column is None:
        return {name: _text(Value(None)) for name in ("told_answer", "told_question", "told_cited")}
    cited = (
        apps.get_model("citations.QuotedSource")
        ._default_manager.filter(query_id=OuterRef(column))
        .order_by()
        .values("query_id")
        .annotate(count=Count("pk"))
        .values("count")
    )
    return {
        "told_answer": _text(column),
        "told_question": _text("question" if column == "pk" else "query__question"),
        "told_cited": Cast(Coalesce(Subquery(cited), 0), TextField()),
    }


def _columns(model: type[Model], table: str, ids: set[str]) -> QuerySet:
    """The rows of one table the page names, shaped alike for the union: table, id,
    answer, then ``COLUMNS`` text columns (unused ones empty)."""
    columns = _told(model).columns
    shaped = {
        "told_table": _text(Value(table)),
        "told_id": _text("pk"),
        **_answer_columns(model),
        **{f"told_{n}": _text(column) for n, column in enumerate(columns)},
        **{f"told_{n}": _text(Value("")) for n in range(len(columns), COLUMNS)},
    }
    return (
        model._default_manager.filter(pk__in=ids).order_by().annotate(**shaped).values_list(*shaped)
    )


def _records(entries: Sequence[EvidenceEntry]) -> dict[tuple[str, str], Record]:
    """The records the entries name, from every table in one query."""
    wanted: dict[str, set[str]] = {}
    for entry in entries:
        wanted.setdefault(entry.record_table, set()).add(entry.record_id)
    models = _models_by_table()
    parts = [
        _columns(models[table], table, ids) for table, ids in wanted.items() if table in models
    ]
    if not parts:
        return {}
    rows = parts[0].union(*parts[1:], all=True) if len(parts) > 1 else parts[0]
    return {
        (table, record_id): Record(
            table, record_id, _answer(answer, question, cited), tuple(values)
        )
        for table, record_id, answer, question, cited, *values in rows
    }


def _answer(answer_id: str | None, question: str | None, cited: str | None) -> Answer | None:
    if answer_id is None or question is None:  # not part of an answer, or it is gone
        return None
    return Answer(id=uuid.UUID(answer_id), question=question, cited=int(cited or 0))
