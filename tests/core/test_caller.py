"""The caller of a request, built in one place: key, session or nobody."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest
from django.test import RequestFactory

from core.api_keys import api_key_verify
from core.caller import Caller, caller_label
from documents.models import OrganizationMember
from tests import factories

pytestmark = pytest.mark.django_db


def _request(user_agent: str = "") -> HttpRequest:
    request = RequestFactory().get("/", REMOTE_ADDR="192.0.2.7", HTTP_USER_AGENT=user_agent)
    request.user = AnonymousUser()
    return request


def test_it_names_an_api_key_caller_by_its_prefix_and_organization() -> None:
    organization = factories.organization()
    key = api_key_verify(presented=factories.api_key(organization))
    request = _request(user_agent="openai-python/1.0")
    # DRF sets ``auth`` on the HttpRequest it wraps; django-stubs do not declare it
    request.auth = key  # type: ignore[attr-defined]

    caller = Caller.from_request(request)

    assert (caller.user, caller.api_key, caller.organization) == (None, key, organization)
    assert (caller.origin, caller.user_agent) == ("192.0.2.7", "openai-python/1.0")
    assert key is not None and caller.label == f"api-key:{key.prefix}"


def test_it_names_a_signed_in_member_by_name_and_first_organization() -> None:
    organization = factories.organization()
    user = get_user_model().objects.create_user("ada")
    OrganizationMember.objects.create(organization=organization, user=user)
    request = _request()
    request.user = user

    caller = Caller.from_request(request)

    assert (caller.user, caller.api_key, caller.organization) == (user, None, organization)
    assert caller.user_agent is None and caller.label == "user:ada"


def test_nobody_is_anonymous_on_an_answer_and_the_system_on_a_document() -> None:
    caller = Caller.from_request(_request())

    assert (caller.user, caller.api_key, caller.organization) == (None, None, None)
    assert caller.label == "anonymous"
    assert caller_label(user=None, api_key=None, nobody="system") == "system"
