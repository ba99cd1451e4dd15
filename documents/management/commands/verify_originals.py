"""Re-hash every stored original against its recorded sha256 now (the periodic
sweep on demand); exit non-zero naming the first that differs or is unreadable."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from documents.models import File
from documents.originals import originals_verify


class Command(BaseCommand):
    help = (
        "Re-hash every stored original (deleted and superseded revisions too) against "
        "its recorded sha256, record the sweep as chained evidence, and fail naming the "
        "first original that differs or cannot be read."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--file", action="append", default=[], help="only this file id")

    def handle(self, *args: object, **options: Any) -> None:
        files = File.objects.filter(pk__in=options["file"]) if options["file"] else None
        total = files.count() if files is not None else File.objects.count()

        def progress(done: int) -> None:
            if done % 500 == 0 or done == total:
                self.stderr.write(f"{done}/{total} originals re-hashed")

        check = originals_verify(files, progress=progress)
        problems = [
            *(f"file {a['file']}: hashes to {a['actual']}, recorded {a['recorded']}"
              for a in check.altered),
            *(f"file {m['file']}: unreadable ({m['error']})" for m in check.missing),
        ]  # fmt: skip
        if problems:
            raise CommandError(
                f"originals FAILED: {len(problems)} of {check.checked} differ or are "
                f"unreadable; first: {problems[0]}"
            )
        self.stdout.write(f"originals OK: {check.checked} re-hashed, each as recorded")
