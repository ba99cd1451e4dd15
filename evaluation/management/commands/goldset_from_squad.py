"""Turn a SQuAD v1.1 / v2.0 file into a gold set (JSON Lines)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.squad import SquadError, article_markdown, squad_gold_items, squad_load


class Command(BaseCommand):
    help = (
        "Write a gold set from a SQuAD file: the article is the expected document, the "
        "paragraph's heading path the section; v2.0's unanswerable questions are "
        "answerable: false. --articles also writes the articles as Markdown to ingest."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--out", type=Path, required=True, help="the gold set to write")
        parser.add_argument("--articles", type=Path, help="a folder for the articles (.md)")

    def handle(self, *args: object, **options: Any) -> None:
        source = Path(options["file"])
        try:
            articles = squad_load(source.read_bytes())
        except OSError as exc:
            raise CommandError(f"cannot read {source}: {exc.strerror}") from exc
        except SquadError as exc:
            raise CommandError(f"{source}: {exc}") from exc
        items = list(squad_gold_items(articles))
        out = Path(options["out"])
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items))
        if options["articles"]:
            self._articles(articles, Path(options["articles"]))
        unanswerable = sum(not i.get("answerable", True) for i in items)
        self.stdout.write(
            f"{out}: {len(items)} items from {len(articles)} articles ({unanswerable} unanswerable)"
        )

    def _articles(self, articles: list[dict], folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for article in articles:
            name = Path(str(article["title"])).name  # no folder in a title
            (folder / f"{name}.md").write_text(article_markdown(article), encoding="utf-8")
