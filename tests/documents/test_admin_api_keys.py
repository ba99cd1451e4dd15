"""An API key's admin page shows its prefix, never its hash, to every role that may
open it (officer, admin, superuser): the hash is what a stolen database would be
tried against, and nobody needs it to tell keys apart."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from core.api_keys import api_key_create
from documents.models import ApiKey, Organization, OrganizationMember
from tests import factories

pytestmark = pytest.mark.django_db


def _signed_in(role: str, org: Organization) -> Client:
    users = get_user_model().objects
    if role == "superuser":
        user = users.create_superuser("root", password="pw-123-456-xyz")
    else:
        user = users.create_user(f"{role}-user", password="pw-123-456-xyz", is_staff=True)
        OrganizationMember.objects.create(organization=org, user=user, role=role)
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("role", ["officer", "admin", "superuser"])
def test_the_key_page_and_list_show_the_prefix_and_never_the_hash(role: str) -> None:
    org = factories.organization("Acme")
    key, _secret = api_key_create(organization=org, name="CI", role="viewer")
    key = ApiKey.objects.get(pk=key.pk)
    client = _signed_in(role, org)
    page = client.get(f"/admin/documents/apikey/{key.pk}/change/")
    listing = client.get("/admin/documents/apikey/")
    for response in (page, listing):
        assert response.status_code == 200
        text = response.content.decode()
        assert key.prefix in text
        assert key.key_hash not in text and "key_hash" not in text and "Key hash" not in text
