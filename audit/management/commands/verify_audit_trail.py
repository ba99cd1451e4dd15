"""Re-compute the evidence hash chain; exit non-zero naming the first bad record."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.ledger import ledger_grew_from, ledger_head, ledger_verify


class Command(BaseCommand):
    help = (
        "Verify the tamper-evident audit trail. --export-head writes the current head so an "
        "auditor can later prove, with --since-head, that the trail only grew."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--export-head", metavar="FILE", help="write the head digest here")
        parser.add_argument("--since-head", metavar="FILE", help="a head exported earlier")

    def handle(self, *args: object, **options: object) -> None:
        verdict = ledger_verify()
        if not verdict.ok:
            raise CommandError(
                f"audit trail FAILED after {verdict.checked} entries: {verdict.problem}"
            )
        if options["since_head"]:
            try:
                earlier = json.loads(Path(str(options["since_head"])).read_text())
            except (OSError, ValueError) as exc:
                raise CommandError(f"cannot read {options['since_head']}: {exc}") from exc
            if not ledger_grew_from(earlier):
                raise CommandError(
                    f"audit trail FAILED: the exported head #{earlier.get('seq')} "
                    f"{earlier.get('entry_hash')} is no longer in the chain"
                )
        head = ledger_head()
        if options["export_head"]:
            Path(str(options["export_head"])).write_text(json.dumps(head, indent=2))
        self.stdout.write(
            f"audit trail OK: {verdict.checked} entries, head #{head['seq']} {head['entry_hash']}"
        )
