"""Create an app (``llm_app_id``) bound to data sources; prints its id last."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from citations.llm_apps import AppError, app_create
from documents.models import Organization


class Command(BaseCommand):
    help = "Create a question-answering app over data sources and print its id."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--organization", required=True)
        parser.add_argument(
            "--data-source",
            action="append",
            required=True,
            dest="data_sources",
            help="repeat for several data sources",
        )
        parser.add_argument("--public", action="store_true", help="answer without an API key")

    def handle(self, *args: object, **options: object) -> None:
        organization = Organization.objects.filter(name=options["organization"]).first()
        if organization is None:
            raise CommandError(f"unknown organization {options['organization']!r}")
        try:
            app = app_create(
                organization=organization,
                name=str(options["name"]),
                data_source_names=list(options["data_sources"]),
                is_public=bool(options["public"]),
            )
        except AppError as exc:
            raise CommandError(str(exc)) from exc
        visibility = "public" if app.is_public else "private"
        self.stdout.write(
            f"created {visibility} app {app.name!r} over {', '.join(options['data_sources'])}"
        )
        self.stdout.write(str(app.pk))
