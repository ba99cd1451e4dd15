"""Set up the demo: an admin login, a "Demo" organization with an API key, and
the project's own demo documents queued for ingestion."""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from citations.llm_apps import app_create
from citations.models import App
from core.api_keys import api_key_create, api_key_verify
from core.members import member_set
from core.roles import Role
from core.user_agents import command_user_agent
from documents.data_sources import data_source_ensure
from documents.demo import demo_documents_write
from documents.models import File, Organization
from documents.uploads import file_upload
from provenance_site.env import secret_file_ensure


class Command(BaseCommand):
    help = "Create the demo organization, admin login, API key and documents; print the logins."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", default="8000")

    def handle(self, *args: object, **options: Any) -> None:
        organization, _ = Organization.objects.get_or_create(name="Demo")
        password = self._admin(organization)
        key = self._api_key(organization)
        source, _ = data_source_ensure(organization=organization, name="Handbook")
        present = set(File.objects.filter(data_source=source).values_list("name", flat=True))
        for path in demo_documents_write(settings.VAR_DIR / "demo"):
            if path.name in present:  # made again each run, with new dates inside: no revision
                continue
            with path.open("rb") as handle:
                file_upload(
                    data_source=source,
                    name=path.name,
                    stream=handle,
                    user_agent=command_user_agent("setup_demo"),
                )
        app = App.objects.filter(organization=organization, name="Handbook").first()
        if app is None:
            app = app_create(
                organization=organization,
                name="Handbook",
                data_source_names=["Handbook"],
                is_public=False,
            )
        base = f"http://127.0.0.1:{options['port']}"
        self.stdout.write(
            f"\nProvenance is starting on {base}/\n"
            f"  admin:    {base}/admin/  user 'admin', password '{password}'\n"
            f"  web:      {base}/  same login: ask, library (upload), history\n"
            f"  API key:  {key}   (organization 'Demo', data source 'Handbook')\n"
            f"  try:      curl -H 'Authorization: Bearer {key}' "
            f"-F file=@README.md -F data_source=Handbook {base}/v1/flow/files\n"
            f"  ask:      curl -H 'Authorization: Bearer {key}' "
            f"-H 'Content-Type: application/json' "
            f'-d \'{{"query": "How long are invoices kept?"}}\' '
            f"{base}/semantics/apps/{app.pk}/query-executions\n"
            f'  app id:   {app.pk}  (python manage.py ask "How long are invoices kept?")\n'
        )

    def _admin(self, organization: Organization) -> str:
        """The admin login; its password is made once and kept in var/ (mode 0600), so
        every start shows the same one (a password changed since is not shown)."""
        saved = settings.VAR_DIR / "demo-admin-password"
        user_model = get_user_model()
        user = user_model.objects.filter(username="admin").first()
        if user is None:
            saved.unlink(missing_ok=True)  # a new login: a new password
            password = secret_file_ensure(saved, lambda: secrets.token_urlsafe(12))
            user = user_model.objects.create_superuser("admin", "admin@example.com", password)
        member_set(organization=organization, user=user, role=Role.ADMIN)
        if saved.exists() and user.check_password(saved.read_text().strip()):
            return saved.read_text().strip()
        return "(unchanged: python manage.py changepassword admin)"

    def _api_key(self, organization: Organization) -> str:
        """The demo key, made once and kept in var/ (mode 0600) while it stays valid."""
        saved = settings.VAR_DIR / "demo-api-key"
        if saved.exists():
            key = api_key_verify(presented=saved.read_text().strip())
            if key is not None and key.organization_id == organization.pk:
                return saved.read_text().strip()
            saved.unlink()
        return secret_file_ensure(
            saved, lambda: api_key_create(organization=organization, name="make run")[1]
        )
