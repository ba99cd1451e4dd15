"""Create (or update) the database role the application runs as; run as the owner."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.database_role import DEFAULT_ROLE, app_role_grant, app_role_owned
from provenance_site.env import env_str


class Command(BaseCommand):
    help = (
        "Create the role the application connects as (owns nothing: cannot disable "
        "triggers, truncate or drop) and grant it what it needs. Run after every migrate."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--role", default=DEFAULT_ROLE)
        parser.add_argument(
            "--password-env",
            default="PROVENANCE_APP_DB_PASSWORD",
            help="environment variable (or NAME_FILE) holding the role's password, if any",
        )

    def handle(self, *args: object, **options: Any) -> None:
        role = str(options["role"])
        try:
            statements = app_role_grant(role=role, password=env_str(str(options["password_env"])))
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        owned = app_role_owned(role)
        if owned:
            raise CommandError(f"role {role} owns {owned} relations: reassign them to the owner")
        self.stdout.write(f"role {role}: {len(statements)} statements applied; owns nothing")
