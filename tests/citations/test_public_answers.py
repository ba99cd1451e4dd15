"""Who reads a public app's answers, and what they see.

The rule (citations/selectors.py ``readable_queries``, core.roles ``Reach``): anyone
reads the answers asked anonymously; a caller reads its own answers, and one whose
role audits (officer, admin) every answer its organization asked (the app's own
organization: every answer of its apps). Internal fields (``storage_name``,
``organization_id``, the asker's ``user_id``) are null for every caller outside the
app's organization."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from core.api_keys import api_key_create
from tests import factories
from tests.citations.conftest import Library
from tests.support.openapi import assert_documented, generated_schema

pytestmark = pytest.mark.django_db

QUESTION = "Within what time must security incidents be reported?"
SOURCES = "/semantics/apps/{llm_app_id}/query-execution-sources/{query_id}/get-quoted-sources"


def _client(key: str | None = None) -> APIClient:
    client = APIClient()
    if key:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def _ask(client: APIClient, app_id: object) -> str:
    response = client.post(
        f"/semantics/apps/{app_id}/query-executions", {"query": QUESTION}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()["query_id"]


def _reads(client: APIClient, app_id: object, query_id: str) -> list:
    """The answer's four read endpoints, as ``client`` gets them."""
    base = f"/semantics/apps/{app_id}"
    return [
        client.get(f"{base}/query-execution-sources/{query_id}/get-quoted-sources"),
        client.get(f"{base}/query-executions/{query_id}"),
        client.get(f"{base}/query-executions/{query_id}/validation"),
        client.post(f"{base}/query-executions/{query_id}/citations", {}, format="json"),
    ]


def _internal(sources: list[dict]) -> set:
    return {
        (s["document"]["storage_name"], s["document"]["organization_id"], s["chunk"]["user_id"])
        for s in sources
    }


def test_an_anonymous_answer_is_readable_by_anyone_without_internal_fields(
    library: Library,
) -> None:
    anonymous = _client()
    query_id = _ask(anonymous, library.public.pk)
    responses = _reads(anonymous, library.public.pk, query_id)
    assert [r.status_code for r in responses] == [200, 200, 200, 200]
    sources = responses[0].json()
    assert sources and _internal(sources) == {(None, None, None)}
    assert {c["organization_id"] for c in responses[3].json()} == {None}
    assert_documented(generated_schema(), 200, sources, SOURCES, "get")
    other = _client(factories.api_key(factories.organization("Globex")))
    assert [r.status_code for r in _reads(other, library.public.pk, query_id)] == [200] * 4


def test_a_members_answer_in_a_public_app_stays_the_organizations(library: Library) -> None:
    member = _client(library.key)
    query_id = _ask(member, library.public.pk)
    for outsider in (_client(), _client(factories.api_key(factories.organization("Globex")))):
        responses = _reads(outsider, library.public.pk, query_id)
        assert [r.status_code for r in responses] == [404] * 4
        assert {r.json()["error"]["code"] for r in responses} == {"not_found"}
    sources = member.get(
        f"/semantics/apps/{library.public.pk}/query-execution-sources/{query_id}/get-quoted-sources"
    ).json()
    organization = str(library.organization.pk)
    assert all(s["document"]["organization_id"] == organization for s in sources)
    assert all(s["document"]["storage_name"] for s in sources)


def test_another_organizations_answer_is_theirs_to_read(library: Library) -> None:
    globex_org = factories.organization("Globex")
    globex = _client(factories.api_key(globex_org))
    query_id = _ask(globex, library.public.pk)
    asked = (library.public.pk, query_id)
    responses = _reads(globex, library.public.pk, query_id)
    assert [r.status_code for r in responses] == [200] * 4
    assert _internal(responses[0].json()) == {(None, None, None)}
    assert [r.status_code for r in _reads(_client(), library.public.pk, query_id)] == [404] * 4
    # Globex's officer reads it too, a colleague's key does not
    globex_officer = api_key_create(organization=globex_org, role="officer")[1]
    colleague = api_key_create(organization=globex_org, role="viewer")[1]
    assert [r.status_code for r in _reads(_client(globex_officer), *asked)] == [200] * 4
    assert [r.status_code for r in _reads(_client(colleague), *asked)] == [404] * 4
    # the app's own organization: its auditors read every answer of its app, with its
    # fields; its editor (library.key) reads its own answers only
    assert [r.status_code for r in _reads(_client(library.key), *asked)] == [404] * 4
    officer = api_key_create(organization=library.organization, role="officer")[1]
    member = _reads(_client(officer), library.public.pk, query_id)
    assert [r.status_code for r in member] == [200] * 4
    assert {s["document"]["organization_id"] for s in member[0].json()} == {
        str(library.organization.pk)
    }
