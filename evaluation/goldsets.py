"""Gold sets: JSON Lines, one item a line.

``{"question": …, "paraphrases": […], "expected": {"document", "section", "answer",
"snippet_id"}, "answerable": true}``; only ``question`` is required. A file is read
whole and checked whole before anything is recorded: every problem is reported with
its line number, and one problem refuses the file.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import PurePosixPath

from citations.models import App
from citations.services.questions import QueryRejected, question_clean
from documents.models import File

MAX_GOLD_BYTES = 20 * 1024 * 1024
MAX_ITEMS = 5000
MAX_PARAPHRASES = 10
MAX_PROBLEMS_SHOWN = 20
ITEM_FIELDS = {"question", "paraphrases", "expected", "answerable", "id"}
EXPECTED_FIELDS = {"document", "section", "answer", "snippet_id"}


class GoldSetError(Exception):
    """The gold file cannot be used; ``problems`` are "line N: why" messages."""

    def __init__(self, problems: list[str]) -> None:
        shown = problems[:MAX_PROBLEMS_SHOWN]
        more = len(problems) - len(shown)
        tail = f"\n… and {more} more" if more > 0 else ""
        super().__init__("the gold set is not usable:\n" + "\n".join(shown) + tail)
        self.problems = problems


@dataclass(frozen=True)
class GoldItem:
    line: int
    question: str
    paraphrases: tuple[str, ...] = ()
    expected: dict = field(default_factory=dict)
    answerable: bool = True
    id: str = ""

    @property
    def variants(self) -> tuple[str, ...]:
        return (self.question, *self.paraphrases)

    def as_json(self) -> dict:
        return {**asdict(self), "paraphrases": list(self.paraphrases)}

    @classmethod
    def from_json(cls, data: dict) -> GoldItem:
        return cls(**{**data, "paraphrases": tuple(data.get("paraphrases", ()))})


@dataclass(frozen=True)
class GoldSet:
    name: str
    sha256: str
    items: tuple[GoldItem, ...]


def goldset_parse(*, name: str, data: bytes) -> GoldSet:
    """Parse and check a whole gold file; raises GoldSetError naming every bad line."""
    if len(data) > MAX_GOLD_BYTES:
        raise GoldSetError([f"the file is larger than {MAX_GOLD_BYTES // (1024 * 1024)} MB"])
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise GoldSetError([f"the file is not UTF-8 text (byte {exc.start})"]) from exc
    items, problems = [], []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            items.append(_item(number, raw))
        except ValueError as exc:
            problems.append(f"line {number}: {exc}")
    if not items and not problems:
        problems.append("the file holds no items (one JSON object a line)")
    if len(items) > MAX_ITEMS:
        problems.append(f"the file holds {len(items)} items; at most {MAX_ITEMS}")
    if problems:
        raise GoldSetError(problems)
    digest = hashlib.sha256(data).hexdigest()
    return GoldSet(name=PurePosixPath(name).name or "gold.jsonl", sha256=digest, items=tuple(items))


def _item(number: int, raw: str) -> GoldItem:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(data, dict):
        raise ValueError(f"an item must be a JSON object, not {type(data).__name__}")
    unknown = sorted(set(data) - ITEM_FIELDS)
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)}")
    if "question" not in data:
        raise ValueError("no question")
    answerable = data.get("answerable", True)
    if not isinstance(answerable, bool):
        raise ValueError("'answerable' must be true or false")
    return GoldItem(
        line=number,
        question=_question(data["question"], "question"),
        paraphrases=_paraphrases(data.get("paraphrases", [])),
        expected=_expected(data.get("expected", {})),
        answerable=answerable,
        id=str(data.get("id", "")),
    )


def _question(value: object, what: str) -> str:
    try:
        return question_clean(value)
    except QueryRejected as exc:
        raise ValueError(exc.message.replace("'query'", f"'{what}'")) from exc


def _paraphrases(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ValueError("'paraphrases' must be a list of questions")
    if len(value) > MAX_PARAPHRASES:
        raise ValueError(f"at most {MAX_PARAPHRASES} paraphrases")
    return tuple(_question(v, f"paraphrases[{i}]") for i, v in enumerate(value))


def _expected(value: object) -> dict:
    if not isinstance(value, dict):
        raise ValueError("'expected' must be an object")
    unknown = sorted(set(value) - EXPECTED_FIELDS)
    if unknown:
        raise ValueError(f"unknown expected field(s) {', '.join(unknown)}")
    for key in ("document", "section", "snippet_id"):
        if key in value and (not isinstance(value[key], str) or not value[key].strip()):
            raise ValueError(f"expected.{key} must be a non-empty string")
    expected = {k: value[k].strip() for k in ("document", "section", "snippet_id") if k in value}
    if "answer" in value:
        expected["answer"] = _answers(value["answer"])
    return expected


def _answers(value: object) -> list[str]:
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, list) or not texts:
        raise ValueError("expected.answer must be a text or a non-empty list of texts")
    if not all(isinstance(t, str) and t.strip() for t in texts):
        raise ValueError("expected.answer must hold non-empty texts only")
    return [t.strip() for t in texts]


def document_name_matches(name: str, expected: str) -> bool:
    """A document named with or without its extension ("Oxygen" is "Oxygen.md")."""
    name, expected = name.casefold(), expected.casefold()
    return name == expected or PurePosixPath(name).stem == expected


def goldset_unknown_documents(*, app: App, gold: GoldSet) -> list[str]:
    """Warnings for items whose expected document is not in the app's data sources:
    they are still asked, and counted as unmatched."""
    names = list(
        File.objects.filter(data_source__apps=app).values_list("name", flat=True).distinct()
    )
    warnings = []
    for item in gold.items:
        wanted = item.expected.get("document")
        if wanted and not any(document_name_matches(n, wanted) for n in names):
            warnings.append(
                f"line {item.line}: expected document {wanted!r} is not in the data sources "
                f"of app {app.name!r}; the item counts as unmatched"
            )
    return warnings
