"""Give the chunks made before contexts existed their context, by ingesting their
files again (documents/chunk_context.py)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser

from core.user_agents import command_user_agent
from documents.ingestion.requeue import file_reconvert
from documents.selectors import files_without_context

REASON = "chunk contexts: each chunk embedded and indexed with the record it belongs to"


class Command(BaseCommand):
    help = (
        "Convert, chunk and embed again every current file whose retrievable chunks have "
        "no context; answers keep citing the chunks they cited."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--organization", help="only this organization's files (its name)")
        parser.add_argument("--dry-run", action="store_true", help="only list the files")

    def handle(self, *args: object, **options: object) -> None:
        organization = options["organization"]
        files = files_without_context(organization_name=str(organization) if organization else None)
        queued = 0
        for record in files:
            if options["dry_run"]:
                self.stdout.write(f"{record.pk} {record.name}")
                continue
            queued += file_reconvert(
                file=record, reason=REASON, user_agent=command_user_agent("chunks_context")
            )
        if not options["dry_run"]:
            self.stdout.write(f"{queued} file(s) queued for a new ingestion")
