"""Ask a question from the command line; prints the answer and its sources."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from citations.exports import quoted_source_record
from citations.generators import ModelError
from citations.models import App, QueryExecution, QuotedSource
from citations.presentation import answer_text
from citations.records import answer_markdown
from citations.selectors import claims_of, quoted_sources_of
from citations.services.execution import query_execute
from citations.services.questions import QueryRejected
from citations.services.searching import IndexMismatch
from core.user_agents import command_user_agent


class Command(BaseCommand):
    help = "Answer QUESTION with [n] references and list the sources (file, page, lines, section)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("question")
        parser.add_argument("--app", help="app name or id (default: the only app)")
        parser.add_argument("--json", action="store_true", help="machine-readable output")
        parser.add_argument(
            "--markdown",
            action="store_true",
            help="the answer with claim footnotes and its sources as Markdown",
        )
        parser.add_argument(
            "--base-url",
            default="",
            help="the origin of the answer's links (the Markdown's, the citation payloads' "
            "source_url); default PROVENANCE_PUBLIC_URL",
        )

    def handle(self, *args: object, **options: Any) -> None:
        app = self._app(options["app"])
        base = str(options["base_url"])
        if base and (not base.startswith(("http://", "https://")) or len(base) > 500):
            raise CommandError("--base-url must be an http(s) URL")
        try:
            execution = query_execute(
                app=app,
                question=options["question"],
                origin="cli",
                user_agent=command_user_agent("ask"),
                base_url=base or None,
            )
        except (QueryRejected, IndexMismatch) as exc:
            raise CommandError(exc.message) from exc
        except ModelError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from exc
        if options["markdown"]:
            self.stdout.write(answer_markdown(execution, base_url=base or None))
            return
        sources = list(quoted_sources_of(execution=execution))
        if options["json"]:
            self.stdout.write(json.dumps(_as_json(execution, sources), indent=2, default=str))
            return
        # plain text: no Markdown syntax nor escapes (--json keeps the exact answer)
        self.stdout.write(answer_text(execution.answer, addresses=True) + "\n")
        for source in sources:
            page = f"p. {source.page_start}" if source.page_start else "no page"
            if source.page_end and source.page_end != source.page_start:
                page = f"pp. {source.page_start}-{source.page_end}"
            self.stdout.write(
                f"[{source.quoted_as}] {source.document_name} (rev {source.file_revision}), "
                f"{page}, "
                f"lines {source.line_number_start}-{source.line_number_end}, "
                f"section: {source.section or '(top)'}"
            )
        self.stdout.write(f"\nquery_id {execution.pk}")

    def _app(self, wanted: object) -> App:
        apps = App.objects.all()
        if wanted:
            found = [a for a in apps if a.name == wanted or str(a.pk) == wanted]
            if not found:
                raise CommandError(f"unknown app {wanted!r}")
            if len(found) > 1:
                raise CommandError(f"several apps are named {wanted!r}; pass its id")
            return found[0]
        first = list(apps[:2])
        if len(first) != 1:
            raise CommandError("--app is required when there is not exactly one app")
        return first[0]


def _as_json(execution: QueryExecution, sources: list[QuotedSource]) -> dict:
    return {
        "query_id": str(execution.pk),
        "answer": execution.answer,
        "index_hash": execution.index_hash,
        "sources": [quoted_source_record(s) for s in sources],
        "claims": [
            {
                "reply_sentence": c.reply_sentence,
                "source_sentence": c.source_sentence,
                "quoted_as": c.quoted_source.quoted_as,
            }
            for c in claims_of(execution=execution)
        ],
    }
