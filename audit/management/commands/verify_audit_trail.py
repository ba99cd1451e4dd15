"""Re-compute the evidence hash chain, check it against the latest exported head,
and report answers stuck ``running``; exit non-zero naming the first problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.heads import head_latest, head_problem, head_signed
from audit.ledger import ledger_verify


class Command(BaseCommand):
    help = (
        "Verify the tamper-evident audit trail: the keyed chain, that it still holds the "
        "latest exported head (or the one given with --since-head), and that no answer is "
        "stuck running. --export-head writes the current signed head to a file."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--export-head", metavar="FILE", help="write the head digest here")
        parser.add_argument(
            "--since-head", metavar="FILE", help="check against this head, not the latest"
        )
        parser.add_argument(
            "--no-head", action="store_true", help="skip the check against an exported head"
        )

    def handle(self, *args: object, **options: Any) -> None:
        if options["since_head"] and options["no_head"]:
            raise CommandError("--since-head and --no-head exclude each other")
        verdict = ledger_verify()
        if not verdict.ok:
            raise CommandError(
                f"audit trail FAILED after {verdict.checked} entries: {verdict.problem}"
            )
        against = "" if options["no_head"] else self._check_head(options["since_head"])
        head = head_signed()
        if options["export_head"]:
            Path(str(options["export_head"])).write_text(json.dumps(head, indent=2))
        legacy = f", {verdict.unkeyed} of them unkeyed (before keying)" if verdict.unkeyed else ""
        self.stdout.write(
            f"audit trail OK: {verdict.checked} entries{legacy}, head #{head['seq']} "
            f"{head['entry_hash']}{against}"
        )

    def _check_head(self, path: object) -> str:
        """Which exported head the chain was checked against (a phrase for the output)."""
        if path:
            name, head, signed = str(path), self._read(str(path)), False
        else:
            try:
                latest = head_latest()
            except Exception as exc:  # storage unreachable or a head unreadable: say so
                raise CommandError(f"cannot read the exported heads: {exc}") from exc
            if latest is None:
                return "; no exported head yet"
            (name, head), signed = latest, True
        problem = head_problem(head, signed=signed)
        if problem:
            raise CommandError(f"audit trail FAILED against {name}: {problem}")
        return f"; holds the exported head #{head.get('seq')} ({name})"

    def _read(self, path: str) -> dict:
        try:
            head = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot read {path}: {exc}") from exc
        if not isinstance(head, dict):
            raise CommandError(f"{path} is not an exported head")
        return head
