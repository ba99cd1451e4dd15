"""Ingest files from the command line, optionally waiting with a progress display."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.user_agents import command_user_agent
from documents.data_sources import DataSourceRejected, data_source_ensure
from documents.models import DataSource, File, FileStatus, Organization
from documents.uploads import UploadRejected, file_upload

_DONE = {FileStatus.READY, FileStatus.FAILED}


class Command(BaseCommand):
    help = "Upload files (or folders of files) into a data source and run ingestion."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", help="files or folders")
        parser.add_argument(
            "--data-source", required=True, help="data source name (created if new)"
        )
        parser.add_argument("--organization", help="organization name (default: the only one)")
        parser.add_argument("--wait", action="store_true", help="wait until every file is done")
        parser.add_argument("--timeout", type=float, default=1800, help="seconds to wait at most")

    def handle(self, *args: object, **options: Any) -> None:
        source = self._data_source(options["organization"], str(options["data_source"]))
        queued, failures = [], 0
        for path in self._files([str(p) for p in options["paths"]]):
            try:
                with path.open("rb") as handle:
                    result = file_upload(
                        data_source=source,
                        name=path.name,
                        stream=handle,
                        user_agent=command_user_agent("ingest"),
                    )
            except UploadRejected as exc:
                failures += 1
                self.stderr.write(f"rejected  {path}: {exc.message}")
                continue
            note = " (identical to the current revision)" if result.duplicate else ""
            self.stdout.write(f"queued    {path.name} rev {result.file.revision}{note}")
            queued.append(result.file.pk)
        if options["wait"] and queued:
            failures += self._wait(queued, float(options["timeout"]))
        if failures:
            raise CommandError(f"{failures} file(s) failed")

    def _data_source(self, organization_name: object, name: str) -> DataSource:
        if organization_name:
            organization = Organization.objects.filter(name=organization_name).first()
            if organization is None:
                raise CommandError(f"unknown organization {organization_name!r}")
        else:
            organizations = list(Organization.objects.all()[:2])
            if len(organizations) != 1:
                raise CommandError("--organization is required when there is not exactly one")
            organization = organizations[0]
        try:
            source, created = data_source_ensure(organization=organization, name=name)
        except DataSourceRejected as exc:
            raise CommandError(exc.message) from exc
        if created:
            self.stdout.write(f"created data source {source.name!r} in {organization.name}")
        return source

    def _files(self, raw_paths: list[str]) -> list[Path]:
        files: list[Path] = []
        for raw in raw_paths:
            path = Path(raw)
            if path.is_dir():
                files += sorted(p for p in path.rglob("*") if p.is_file())
            elif path.is_file():
                files.append(path)
            else:
                raise CommandError(f"no such file or folder: {raw}")
        return files

    def _wait(self, file_ids: list, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        shown: dict[object, str] = {}
        while True:
            records = list(File.objects.filter(pk__in=file_ids).order_by("created_at"))
            for record in records:
                done = f"{record.progress_done}/{record.progress_total}"
                line = f"{record.status:<10} {record.name} {done}"
                if shown.get(record.pk) != line:
                    shown[record.pk] = line
                    if sys.stdout.isatty() or record.status not in _DONE:
                        self.stdout.write(f"  … {line}")
            if all(r.status in _DONE for r in records) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        return self._summary(records)

    def _summary(self, records: list[File]) -> int:
        failures = 0
        for record in records:
            if record.status == FileStatus.READY:
                chunks = record.chunks.filter(markdown__is_active=True).count()
                self.stdout.write(
                    f"ready     {record.name} rev {record.revision}: "
                    f"{chunks} chunk{'s' if chunks != 1 else ''}, "
                    f"sha256 {record.sha256[:12]}…, file_id {record.pk}"
                )
            elif record.status == FileStatus.FAILED:
                failures += 1
                self.stdout.write(f"failed    {record.name}: {record.error_message}")
            else:
                failures += 1
                self.stdout.write(f"timeout   {record.name}: still {record.status}")
        return failures
