"""An organization with one member and one key of each role, and a stranger, for the
tests of who reaches whose answers, threads and responses (core.roles ``Reach``).

Built once per module (answers take a model load and a retrieval each): the module
fixture commits it, and flushes the database before and after, as the shared
libraries of tests/citations do.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from pytest_django import DjangoDbBlocker

from citations.llm_apps import app_create
from citations.models import App
from core.api_keys import api_key_create
from documents.models import ApiKey, DataSource, File, Organization, OrganizationMember
from tests import factories
from tests.web.conftest import REMOTE_WORK, ingest_now

ROLES = ("viewer", "editor", "officer", "admin")
QUESTION = "How many remote days per week?"
PASSWORD = "pw-123-456-xyz"


@dataclass
class Office:
    """Acme: a ready handbook, an app over it, a member and a key of each role (and a
    second viewer key, the colleague); Globex: an admin key (the stranger)."""

    acme: Organization
    source: DataSource
    file: File  # ready, chunked and embedded
    app: App
    members: dict[str, User]
    keys: dict[str, str]
    key_rows: dict[str, ApiKey] = field(default_factory=dict)
    stranger_key: str = ""

    def rest(self, who: str, **headers: Any) -> Client:
        """A client with ``who``'s key (a role, ``colleague`` or ``stranger``)."""
        key = self.stranger_key if who == "stranger" else self.keys[who]
        return Client(**{"HTTP_AUTHORIZATION": f"Bearer {key}", **headers})

    def signed_in(self, role: str) -> Client:
        client = Client()
        client.force_login(self.members[role])
        return client


def office_build() -> Office:
    acme, globex = factories.organization("Acme"), factories.organization("Globex")
    source = factories.data_source(acme, "Handbook")
    record = ingest_now(factories.upload(source, "remote.md", REMOTE_WORK).file)
    assert record.status == "ready", record.error_message
    app = app_create(organization=acme, name="HR", data_source_names=["Handbook"])
    members = {}
    for role in ROLES:
        user = get_user_model().objects.create_user(f"{role}-member", password=PASSWORD)
        OrganizationMember.objects.create(organization=acme, user=user, role=role)
        members[role] = user
    office = Office(acme=acme, source=source, file=record, app=app, members=members, keys={})
    for who, role in [*((r, r) for r in ROLES), ("colleague", "viewer")]:
        row, secret = api_key_create(organization=acme, role=role, name=who)
        office.keys[who], office.key_rows[who] = secret, row
    office.stranger_key = api_key_create(organization=globex, role="admin")[1]
    return office


def office_fixture(django_db_blocker: DjangoDbBlocker) -> Iterator[Office]:
    """The body of a module-scoped fixture: flush, build, yield, flush."""
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)
        yield office_build()
        call_command("flush", interactive=False, verbosity=0)
