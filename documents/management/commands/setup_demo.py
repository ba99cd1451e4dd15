"""Set up the demo: an admin login, a "Demo" organization with an API key, and
the project's own demo documents queued for ingestion."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from citations.llm_apps import app_create
from citations.models import App
from documents.api_keys import api_key_create
from documents.demo import demo_documents_write
from documents.models import DataSource, Organization, OrganizationMember
from documents.uploads import file_upload
from retrieval.services import vector_database_default


class Command(BaseCommand):
    help = "Create the demo organization, admin login, API key and documents; print the logins."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", default="8000")

    def handle(self, *args: object, **options: object) -> None:
        organization, _ = Organization.objects.get_or_create(name="Demo")
        password = self._admin(organization)
        _, key = api_key_create(organization=organization, name="make run")
        source = DataSource.objects.filter(organization=organization, name="Handbook").first()
        if source is None:
            source = DataSource.objects.create(
                organization=organization,
                name="Handbook",
                vector_database=vector_database_default(organization=organization),
            )
        for path in demo_documents_write(settings.VAR_DIR / "demo"):
            with path.open("rb") as handle:
                file_upload(data_source=source, name=path.name, stream=handle)
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
        password = secrets.token_urlsafe(12)
        user_model = get_user_model()
        user = user_model.objects.filter(username="admin").first()
        if user is None:
            user = user_model.objects.create_superuser("admin", "admin@example.com", password)
        else:
            user.set_password(password)
            user.save(update_fields=["password"])
        OrganizationMember.objects.get_or_create(organization=organization, user=user)
        return password
