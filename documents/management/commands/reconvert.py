"""Convert again the files an older converter version produced."""

from __future__ import annotations

import getpass
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.user_agents import command_user_agent
from documents.converters import KINDS
from documents.models import File, FileStatus, Organization
from documents.reconversion import files_outdated, outdated_file_reconvert

_DONE = {FileStatus.READY, FileStatus.FAILED}


def _account() -> str:
    """Who ran the command, for the reason recorded: the shell account, if known."""
    try:
        return f" run by {getpass.getuser()}"
    except (KeyError, OSError):
        return ""


class Command(BaseCommand):
    help = (
        "Convert, chunk and embed again every current file whose Markdown an older "
        "converter produced; answers keep citing the chunks they cited."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--organization", help="only this organization's files")
        parser.add_argument(
            "--kind",
            action="append",
            choices=KINDS,
            help="only files of this kind (repeatable)",
        )
        parser.add_argument(
            "--limit",
            type=int,
            help="queue at most this many files, oldest first (run again for the rest)",
        )
        parser.add_argument("--dry-run", action="store_true", help="list, queue nothing")
        parser.add_argument("--wait", action="store_true", help="wait until every file is done")
        parser.add_argument("--timeout", type=float, default=1800, help="seconds to wait at most")

    def handle(self, *args: object, **options: Any) -> None:
        files = None
        if options["organization"]:
            organization = Organization.objects.filter(name=options["organization"]).first()
            if organization is None:
                raise CommandError(f"no organization named {options['organization']!r}")
            files = File.objects.filter(organization=organization)
        limit = options["limit"]
        if limit is not None and limit < 1:
            raise CommandError("--limit must be at least 1")
        outdated, left = files_outdated(files=files, kinds=options["kind"] or KINDS, limit=limit)
        queued: list[File] = []
        why = f"reconvert command{_account()}"
        for item in outdated:
            record, change = item.file, item.change
            if options["dry_run"]:
                self.stdout.write(f"outdated  {record.name} ({record.pk}): {change}")
            elif outdated_file_reconvert(
                outdated=item, why=why, user_agent=command_user_agent("reconvert")
            ):
                queued.append(record)
                self.stdout.write(f"queued    {record.name} ({record.pk}): {change}")
            else:
                self.stdout.write(f"skipped   {record.name} ({record.pk}): no longer ready")
        verb = "to convert again" if options["dry_run"] else "queued to convert again"
        failed = self._wait(queued, float(options["timeout"])) if options["wait"] else 0
        count = len(outdated) if options["dry_run"] else len(queued)
        self.stdout.write(f"{count} file(s) {verb}")
        if left > 0:
            self.stdout.write(f"{left} more outdated file(s) left past --limit: run again")
        if failed:
            raise CommandError(
                f"{failed} file(s) could not be converted again; they stay on their "
                "previous conversion"
            )

    def _wait(self, records: list[File], timeout: float) -> int:
        """Print each file's outcome as it ends; returns how many did not convert."""
        deadline = time.monotonic() + timeout
        pending = {r.pk for r in records}
        failed = 0
        while pending and time.monotonic() < deadline:
            done = File.objects.filter(pk__in=pending, status__in=_DONE)
            for record in done:
                note = f": {record.error_message}" if record.error_message else ""
                self.stdout.write(f"{record.status:9s} {record.name} ({record.pk}){note}")
                failed += bool(record.error_message) or record.status == FileStatus.FAILED
                pending.discard(record.pk)
            time.sleep(0.2)
        if pending:
            raise CommandError(f"{len(pending)} file(s) still converting after {timeout:.0f} s")
        return failed
