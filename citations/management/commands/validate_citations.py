"""Run the citation validator on a recorded answer or on a JSON payload file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from citations.models import QueryExecution
from citations.services.revalidation import query_validate
from citations.validation import validate_citations
from documents.json_limits import MAX_DOCUMENT_DEPTH, json_loads_bounded


class Command(BaseCommand):
    help = (
        "Validate citations: of a query (QUERY_ID) or of a payload file (--file). Exit 1 if not ok."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("query_id", nargs="?")
        parser.add_argument("--file", help="a JSON list of citation payloads")
        parser.add_argument("--allow-cross-section", action="store_true")

    def handle(self, *args: object, **options: Any) -> None:
        if options["file"]:
            try:
                items = json_loads_bounded(
                    Path(str(options["file"])).read_text(), max_depth=MAX_DOCUMENT_DEPTH
                )
            except (OSError, ValueError) as exc:
                raise CommandError(f"cannot read {options['file']}: {exc}") from exc
            if not isinstance(items, list):
                raise CommandError("the file must hold a JSON list of citation payloads")
            result = validate_citations(
                items, allow_cross_section=bool(options["allow_cross_section"])
            )
            report = {"result": result}
        elif options["query_id"]:
            execution = QueryExecution.objects.filter(pk=options["query_id"]).first()
            if execution is None:
                raise CommandError(f"unknown query {options['query_id']}")
            report = query_validate(execution=execution)
        else:
            raise CommandError("give a QUERY_ID or --file")
        self.stdout.write(json.dumps(report, indent=2))
        if report["result"] != "ok":
            raise CommandError(f"validation failed: {report['result']}")
