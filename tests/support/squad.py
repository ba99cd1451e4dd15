"""SQuAD v1.1 articles from the shared corpus rendered as Markdown documents.

Each article becomes one Markdown file (``# Title``, one ``## Paragraph n``
section per paragraph) so that questions can be checked against the exact
passage that answers them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Question:
    text: str
    answers: tuple[str, ...]
    article: str
    paragraph: int
    context: str


def load(corpus: Path) -> list[dict]:
    return json.loads((corpus / "qa/squad-v1.1-dev-subset6.json").read_text())["data"]


def article_markdown(article: dict) -> str:
    title = article["title"].replace("_", " ")
    parts = [f"# {title}\n"]
    for number, paragraph in enumerate(article["paragraphs"], start=1):
        parts.append(f"## Paragraph {number}\n\n{paragraph['context'].strip()}\n")
    return "\n".join(parts)


def questions(corpus: Path) -> list[Question]:
    found = []
    for article in load(corpus):
        for number, paragraph in enumerate(article["paragraphs"], start=1):
            for qa in paragraph["qas"]:
                found.append(
                    Question(
                        text=qa["question"],
                        answers=tuple(a["text"] for a in qa["answers"]),
                        article=article["title"],
                        paragraph=number,
                        context=paragraph["context"],
                    )
                )
    return found
