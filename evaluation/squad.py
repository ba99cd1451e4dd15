"""SQuAD v1.1 / v2.0 files as gold sets, and their articles as Markdown documents.

An article becomes ``# Title`` with one ``## Paragraph n`` section per paragraph, so
a question's expected section is the heading path of the paragraph that answers it
(``Title > Paragraph n``, as chunks record it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

SECTION_SEPARATOR = " > "  # how ingestion joins a chunk's heading path


class SquadError(Exception):
    """The file is not a SQuAD dataset."""


def squad_load(data: bytes) -> list[dict]:
    try:
        parsed = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SquadError(f"not JSON: {exc}") from exc
    articles = parsed.get("data") if isinstance(parsed, dict) else None
    if not isinstance(articles, list) or not all(
        isinstance(a, dict) and "title" in a and isinstance(a.get("paragraphs"), list)
        for a in articles
    ):
        raise SquadError('not a SQuAD file: expected {"data": [{"title", "paragraphs"}]}')
    return articles


def article_title(article: dict) -> str:
    return str(article["title"]).replace("_", " ")


def article_markdown(article: dict) -> str:
    parts = [f"# {article_title(article)}\n"]
    for number, paragraph in enumerate(article["paragraphs"], start=1):
        parts.append(f"## Paragraph {number}\n\n{paragraph['context'].strip()}\n")
    return "\n".join(parts)


def squad_gold_items(articles: list[dict]) -> Iterator[dict]:
    """One gold item per question; v2.0's impossible ones are ``answerable: false``."""
    for article in articles:
        for number, paragraph in enumerate(article["paragraphs"], start=1):
            section = f"{article_title(article)}{SECTION_SEPARATOR}Paragraph {number}"
            for qa in paragraph.get("qas", []):
                yield _gold_item(qa, str(article["title"]), section)


def _gold_item(qa: dict, document: str, section: str) -> dict:
    expected: dict = {"document": document, "section": section}
    answerable = not qa.get("is_impossible", False)
    answers = list(dict.fromkeys(a["text"].strip() for a in qa.get("answers", [])))
    if answerable and answers:
        expected["answer"] = answers
    item = {"id": str(qa.get("id", "")), "question": qa["question"].strip(), "expected": expected}
    if not answerable:
        item["answerable"] = False
    return item
