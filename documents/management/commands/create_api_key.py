"""Print a new API key for an organization (shown once; only its hash is kept)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.api_keys import api_key_create
from core.roles import Role
from documents.models import Organization


class Command(BaseCommand):
    help = "Create an API key for an organization and print it (it is never shown again)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--organization", required=True, help="organization name")
        parser.add_argument("--name", default="", help="a label for the key")
        parser.add_argument(
            "--role",
            default=Role.EDITOR,
            choices=Role.values,
            help="what the key may do (core.roles); default editor",
        )
        parser.add_argument(
            "--create-organization",
            action="store_true",
            help="create the organization if it does not exist",
        )

    def handle(self, *args: object, **options: Any) -> None:
        name = str(options["organization"])
        if options["create_organization"]:
            organization, _ = Organization.objects.get_or_create(name=name)
        else:
            found = Organization.objects.filter(name=name).first()
            if found is None:
                raise CommandError(f"unknown organization {name!r} (use --create-organization)")
            organization = found
        _, secret = api_key_create(
            organization=organization, role=str(options["role"]), name=str(options["name"])
        )
        self.stdout.write(secret)
