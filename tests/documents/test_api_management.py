"""The management endpoints of /v1/flow/ (documents/api/management/, and
citations/api/app_management.py for apps): data sources,
a data source's files, apps and API keys — happy paths checked against the OpenAPI
schema, other tenants' ids (404), roles (403), bad input (400) and no key (401)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from citations.models import App, QueryExecution
from core.api_keys import api_key_create
from documents.models import ApiKey, DataSource, File, FileStatus, Organization
from tests import factories
from tests.support.openapi import assert_documented, generated_schema
from tests.support.tamper import triggers_off

if TYPE_CHECKING:
    from pytest_django import DjangoAssertNumQueries
    from rest_framework.response import _MonkeyPatchedResponse


pytestmark = pytest.mark.django_db

UNKNOWN = "00000000-0000-0000-0000-000000000000"


@dataclass
class Tenant:
    organization: Organization
    keys: dict[str, str]  # role -> secret

    def client(self, role: str = "editor") -> APIClient:
        return _client(self.keys[role])


def _client(key: str | None) -> APIClient:
    client = APIClient()
    if key:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def _tenant(name: str) -> Tenant:
    org = factories.organization(name)
    roles = ("viewer", "editor", "officer", "admin")
    keys = {role: api_key_create(organization=org, role=role, name=role)[1] for role in roles}
    return Tenant(org, keys)


@pytest.fixture
def acme() -> Tenant:
    return _tenant("Acme")


@pytest.fixture
def globex() -> Tenant:
    return _tenant("Globex")


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return generated_schema()


def _documented(
    schema: dict, response: _MonkeyPatchedResponse, path: str, method: str, status: int
) -> dict:
    assert response.status_code == status, response.content
    assert_documented(schema, response.status_code, response.json(), path, method)
    return response.json()


def _error(response: _MonkeyPatchedResponse, status: int, code: str, param: str | None) -> None:
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert (error["code"], error["param"]) == (code, param), error
    assert error["message"] and error["type"]


# data sources


def test_an_editor_creates_reads_renames_and_deletes_a_data_source(
    acme: Tenant, schema: dict
) -> None:
    client = acme.client("editor")
    created = _documented(
        schema,
        client.post("/v1/flow/data-sources", {"name": "  Human Resources "}, format="json"),
        "/v1/flow/data-sources",
        "post",
        201,
    )
    assert created["name"] == "Human Resources" and created["file_count"] == 0
    source = DataSource.objects.get(pk=created["id"])
    assert str(source.vector_database_id) == created["database_id"]
    assert source.vector_database.organization == acme.organization
    assert created["files_url"] == f"http://testserver/v1/flow/data-sources/{source.pk}/files"

    detail_path = "/v1/flow/data-sources/{data_source_id}"
    url = f"/v1/flow/data-sources/{source.pk}"
    listed = _documented(
        schema, client.get("/v1/flow/data-sources"), "/v1/flow/data-sources", "get", 200
    )
    assert [s["name"] for s in listed["data"]] == ["Human Resources"]
    assert _documented(schema, client.get(url), detail_path, "get", 200) == created

    renamed = _documented(
        schema, client.patch(url, {"name": "People"}, format="json"), detail_path, "patch", 200
    )
    assert renamed["name"] == "People" and renamed["id"] == created["id"]
    deleted = _documented(schema, client.delete(url), detail_path, "delete", 200)
    assert deleted == {"id": created["id"], "object": "data_source.deleted", "deleted": True}
    assert not DataSource.objects.filter(pk=source.pk).exists()
    _error(client.get(url), 404, "not_found", "data_source_id")


def test_a_data_source_name_is_unique_in_its_organization_only(
    acme: Tenant, globex: Tenant, schema: dict
) -> None:
    assert (
        acme.client().post("/v1/flow/data-sources", {"name": "HR"}, format="json").status_code
        == 201
    )
    again = acme.client().post("/v1/flow/data-sources", {"name": "HR"}, format="json")
    _error(again, 409, "data_source_exists", "name")
    assert_documented(schema, 409, again.json(), "/v1/flow/data-sources", "post")
    other = globex.client().post("/v1/flow/data-sources", {"name": "HR"}, format="json")
    assert other.status_code == 201
    second = acme.client().post("/v1/flow/data-sources", {"name": "Legal"}, format="json").json()
    clash = acme.client().patch(
        f"/v1/flow/data-sources/{second['id']}", {"name": "HR"}, format="json"
    )
    _error(clash, 409, "data_source_exists", "name")
    assert DataSource.objects.get(pk=second["id"]).name == "Legal"


@pytest.mark.parametrize(
    ("body", "code", "param"),
    [
        ({}, "invalid", "name"),
        ({"name": ""}, "invalid", "name"),
        ({"name": "   "}, "invalid", "name"),
        ({"name": 42}, "invalid", "name"),
        ({"name": ["HR"]}, "invalid", "name"),
        ({"name": "x" * 201}, "invalid", "name"),
        (["HR"], "invalid_body", None),
    ],
)
def test_malformed_data_source_input_is_a_400_naming_the_field(
    acme: Tenant, body: object, code: str, param: str | None
) -> None:
    response = acme.client().post("/v1/flow/data-sources", body, format="json")
    _error(response, 400, code, param)
    assert not DataSource.objects.exists()


def test_a_non_json_body_is_refused_with_415(acme: Tenant) -> None:
    response = acme.client().post("/v1/flow/data-sources", "name=HR", content_type="text/plain")
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"


def test_a_data_source_that_held_a_file_or_serves_an_app_is_not_deleted(
    acme: Tenant, schema: dict
) -> None:
    source = factories.data_source(acme.organization, "HR")
    record = factories.upload(source, "leave.md", b"# Leave\n\nTwenty days.\n").file
    File.objects.filter(pk=record.pk).update(deleted_at=timezone.now())  # deleted: evidence still
    response = acme.client().delete(f"/v1/flow/data-sources/{source.pk}")
    _error(response, 409, "data_source_not_empty", "data_source_id")
    assert "1 file revision" in response.json()["error"]["message"]
    assert_documented(
        schema, 409, response.json(), "/v1/flow/data-sources/{data_source_id}", "delete"
    )

    empty = factories.data_source(acme.organization, "Legal")
    app = App.objects.create(organization=acme.organization, name="Counsel")
    app.data_sources.set([empty])
    in_use = acme.client().delete(f"/v1/flow/data-sources/{empty.pk}")
    _error(in_use, 409, "data_source_in_use", "data_source_id")
    assert "'Counsel'" in in_use.json()["error"]["message"]
    assert DataSource.objects.filter(pk__in=[source.pk, empty.pk]).count() == 2


def test_another_tenants_data_source_is_not_found(acme: Tenant, globex: Tenant) -> None:
    theirs = factories.data_source(globex.organization, "Secret")
    client = acme.client("admin")
    url = f"/v1/flow/data-sources/{theirs.pk}"
    for response in (
        client.get(url),
        client.patch(url, {"name": "Mine"}, format="json"),
        client.delete(url),
        client.get(f"{url}/files"),
        client.get("/v1/flow/data-sources/not-a-uuid"),
    ):
        _error(response, 404, "not_found", "data_source_id")
    assert [s["name"] for s in client.get("/v1/flow/data-sources").json()["data"]] == []
    assert DataSource.objects.get(pk=theirs.pk).name == "Secret"


def test_a_viewer_reads_data_sources_but_cannot_manage_them(acme: Tenant) -> None:
    source = factories.data_source(acme.organization, "HR")
    url = f"/v1/flow/data-sources/{source.pk}"
    for role in ("viewer", "officer"):
        client = acme.client(role)
        assert client.get("/v1/flow/data-sources").status_code == 200
        assert client.get(url).status_code == 200
        assert client.get(f"{url}/files").status_code == 200
        for response in (
            client.post("/v1/flow/data-sources", {"name": "Mine"}, format="json"),
            client.patch(url, {"name": "Mine"}, format="json"),
            client.delete(url),
        ):
            _error(response, 403, "permission_denied", None)
            assert (
                f"the {role} role may not manage data sources"
                in response.json()["error"]["message"]
            )
    assert list(DataSource.objects.values_list("name", flat=True)) == ["HR"]


# a data source's files


def _upload(source: DataSource, name: str, *, ago: timedelta, status: str = "pending") -> File:
    record = factories.upload(source, name, f"# {name}\n\nText of {name}.\n".encode()).file
    with triggers_off():
        File.objects.filter(pk=record.pk).update(created_at=timezone.now() - ago, status=status)
    return record


def test_a_data_sources_files_are_filtered_and_paginated(acme: Tenant, schema: dict) -> None:
    source = factories.data_source(acme.organization, "HR")
    other = factories.data_source(acme.organization, "Legal")
    old = _upload(source, "Leave policy.md", ago=timedelta(days=40), status=FileStatus.READY)
    mid = _upload(source, "travel.md", ago=timedelta(days=10), status=FileStatus.FAILED)
    new = _upload(source, "leave-faq.txt", ago=timedelta(days=1))
    _upload(other, "leave elsewhere.md", ago=timedelta(days=1))
    url, path = (
        f"/v1/flow/data-sources/{source.pk}/files",
        "/v1/flow/data-sources/{data_source_id}/files",
    )
    client = acme.client("viewer")

    def ids(query: str = "") -> list[str]:
        body = _documented(schema, client.get(f"{url}{query}"), path, "get", 200)
        return [f["file_id"] for f in body["data"]]

    assert ids() == [str(new.pk), str(mid.pk), str(old.pk)]  # newest first
    assert ids("?order=asc") == [str(old.pk), str(mid.pk), str(new.pk)]
    assert ids("?status=failed") == [str(mid.pk)]
    assert ids("?kind=text") == [str(new.pk)]
    assert ids("?name=LEAVE") == [str(new.pk), str(old.pk)]
    since = (timezone.now() - timedelta(days=20)).isoformat()
    assert ids(f"?uploaded_since={since.replace('+', '%2B')}") == [str(new.pk), str(mid.pk)]
    assert ids("?uploaded_since=2000-01-01T00:00:00Z&status=ready&name=policy") == [str(old.pk)]

    first = client.get(f"{url}?limit=2").json()
    assert (first["has_more"], first["first_id"], first["last_id"]) == (
        True,
        str(new.pk),
        str(mid.pk),
    )
    rest = client.get(f"{url}?limit=2&after={first['last_id']}").json()
    assert [f["file_id"] for f in rest["data"]] == [str(old.pk)] and rest["has_more"] is False
    back = client.get(f"{url}?limit=2&before={old.pk}").json()
    assert [f["file_id"] for f in back["data"]] == [str(new.pk), str(mid.pk)]


@pytest.mark.parametrize(
    ("query", "code", "param"),
    [
        ("status=done", "invalid", "status"),
        ("kind=exe", "invalid", "kind"),
        ("uploaded_since=yesterday", "invalid", "uploaded_since"),
        ("uploaded_since=2026-13-01T00:00:00Z", "invalid", "uploaded_since"),
        ("name=" + "x" * 256, "invalid", "name"),
        ("name=a%00b", "invalid", "name"),
        ("limit=0", "invalid_limit", "limit"),
        ("limit=many", "invalid_limit", "limit"),
        ("order=up", "invalid_order", "order"),
        (f"after={UNKNOWN}", "invalid_cursor", "after"),
        ("before=nope", "invalid_cursor", "before"),
    ],
)
def test_an_invalid_file_filter_is_a_400_naming_it(
    acme: Tenant, schema: dict, query: str, code: str, param: str
) -> None:
    source = factories.data_source(acme.organization, "HR")
    response = acme.client().get(f"/v1/flow/data-sources/{source.pk}/files?{query}")
    _error(response, 400, code, param)
    assert_documented(
        schema, 400, response.json(), "/v1/flow/data-sources/{data_source_id}/files", "get"
    )


def test_listing_files_takes_the_same_queries_for_two_files_or_twelve(
    acme: Tenant, django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    source = factories.data_source(acme.organization, "HR")
    client, url = acme.client(), f"/v1/flow/data-sources/{source.pk}/files"
    for number in range(2):
        _upload(source, f"doc{number}.md", ago=timedelta(minutes=number))
    client.get(url)  # the key's last_used_at is written once a minute: not in the count
    with django_assert_num_queries(3) as two:  # key, data source, files
        assert len(client.get(url).json()["data"]) == 2
    for number in range(2, 12):
        _upload(source, f"doc{number}.md", ago=timedelta(minutes=number))
    with django_assert_num_queries(len(two.captured_queries)):
        assert len(client.get(url).json()["data"]) == 12


# apps


def test_an_editor_creates_lists_reads_changes_and_deletes_an_app(
    acme: Tenant, schema: dict
) -> None:
    hr = factories.data_source(acme.organization, "HR")
    legal = factories.data_source(acme.organization, "Legal")
    client = acme.client("editor")
    body = {
        "name": "Answers",
        "data_sources": [str(hr.pk), "Legal"],
        "top_k": 5,
        "is_public": False,
    }
    created = _documented(
        schema, client.post("/v1/flow/apps", body, format="json"), "/v1/flow/apps", "post", 201
    )
    assert [s["name"] for s in created["data_sources"]] == ["HR", "Legal"]
    assert (created["top_k"], created["generator"], created["candidate_k"]) == (5, "extractive", 40)
    assert (
        created["query_url"] == f"http://testserver/semantics/apps/{created['id']}/query-executions"
    )
    url, path = f"/v1/flow/apps/{created['id']}", "/v1/flow/apps/{app_id}"

    viewer = acme.client("viewer")
    listed = _documented(schema, viewer.get("/v1/flow/apps"), "/v1/flow/apps", "get", 200)
    assert [a["id"] for a in listed["data"]] == [created["id"]]
    assert _documented(schema, viewer.get(url), path, "get", 200) == created

    change = {
        "min_score": 0.2,
        "data_sources": ["Legal"],
        "name": "Legal answers",
        "prompt": "Be brief.",
    }
    changed = _documented(schema, client.patch(url, change, format="json"), path, "patch", 200)
    assert changed["data_sources"] == [{"id": str(legal.pk), "name": "Legal"}]
    assert (changed["min_score"], changed["top_k"], changed["name"]) == (0.2, 5, "Legal answers")
    assert changed["prompt"] == "Be brief."
    assert client.patch(url, {}, format="json").json() == changed

    deleted = _documented(schema, client.delete(url), path, "delete", 200)
    assert deleted == {"id": created["id"], "object": "app.deleted", "deleted": True}
    _error(client.get(url), 404, "not_found", "app_id")


def test_an_app_that_answered_is_never_deleted(acme: Tenant, schema: dict) -> None:
    """Its answers are evidence; they would be orphaned or lost with it."""
    source = factories.data_source(acme.organization, "HR")
    app = App.objects.create(organization=acme.organization, name="Answers")
    app.data_sources.set([source])
    QueryExecution.objects.create(app=app, organization=acme.organization, question="Leave?")
    response = acme.client("admin").delete(f"/v1/flow/apps/{app.pk}")
    _error(response, 409, "app_has_answers", "app_id")
    assert_documented(schema, 409, response.json(), "/v1/flow/apps/{app_id}", "delete")
    assert App.objects.filter(pk=app.pk).exists() and QueryExecution.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "code", "param"),
    [
        ({"data_sources": ["HR"]}, "invalid", "name"),
        ({"name": "A"}, "invalid", "data_sources"),
        ({"name": "A", "data_sources": []}, "invalid", "data_sources"),
        ({"name": "A", "data_sources": "HR"}, "invalid", "data_sources"),
        ({"name": "A", "data_sources": ["Nope", "HR"]}, "unknown_data_source", "data_sources"),
        ({"name": "A", "data_sources": [UNKNOWN]}, "unknown_data_source", "data_sources"),
        ({"name": "A", "data_sources": ["HR"], "top_k": "5"}, "invalid", "top_k"),
        ({"name": "A", "data_sources": ["HR"], "top_k": 0}, "invalid", "top_k"),
        ({"name": "A", "data_sources": ["HR"], "candidate_k": 10**6}, "invalid", "candidate_k"),
        ({"name": "A", "data_sources": ["HR"], "min_score": True}, "invalid", "min_score"),
        ({"name": "A", "data_sources": ["HR"], "temperature": 3}, "invalid", "temperature"),
        ({"name": "A", "data_sources": ["HR"], "is_public": 1}, "invalid", "is_public"),
        ({"name": "A", "data_sources": ["HR"], "generator": "gpt"}, "invalid", "generator"),
        ({"name": "A", "data_sources": ["HR"], "generator": "openai"}, "invalid_app", "model"),
        ({"name": "A", "data_sources": ["HR"], "reasoning": "deep"}, "invalid", "reasoning"),
        ({"name": "A" * 201, "data_sources": ["HR"]}, "invalid", "name"),
        ({"name": "A", "data_sources": ["HR"], "prompt": "p" * 20_001}, "invalid", "prompt"),
        ("A", "invalid_body", None),
    ],
)
def test_malformed_app_input_is_a_400_naming_the_field(
    acme: Tenant, body: object, code: str, param: str | None
) -> None:
    factories.data_source(acme.organization, "HR")
    response = acme.client().post("/v1/flow/apps", body, format="json")
    _error(response, 400, code, param)
    assert not App.objects.exists()


def test_an_app_name_is_unique_and_a_change_is_checked_as_a_whole(acme: Tenant) -> None:
    factories.data_source(acme.organization, "HR")
    client = acme.client()
    first = client.post(
        "/v1/flow/apps", {"name": "A", "data_sources": ["HR"]}, format="json"
    ).json()
    again = client.post("/v1/flow/apps", {"name": "A", "data_sources": ["HR"]}, format="json")
    _error(again, 409, "app_exists", "name")
    url = f"/v1/flow/apps/{first['id']}"
    _error(
        client.patch(url, {"generator": "anthropic"}, format="json"), 400, "invalid_app", "model"
    )
    _error(
        client.patch(url, {"data_sources": ["Gone"]}, format="json"),
        400,
        "unknown_data_source",
        "data_sources",
    )
    ok = client.patch(url, {"generator": "anthropic", "model": "claude-sonnet-4-5"}, format="json")
    assert ok.status_code == 200 and ok.json()["generator"] == "anthropic"


def test_another_tenants_app_is_not_found_even_when_public(acme: Tenant, globex: Tenant) -> None:
    theirs = App.objects.create(organization=globex.organization, name="Public", is_public=True)
    client, url = acme.client("admin"), f"/v1/flow/apps/{theirs.pk}"
    for response in (
        client.get(url),
        client.patch(url, {"top_k": 1}, format="json"),
        client.delete(url),
        client.get("/v1/flow/apps/12"),
    ):
        _error(response, 404, "not_found", "app_id")
    assert client.get("/v1/flow/apps").json()["data"] == []
    assert App.objects.get(pk=theirs.pk).top_k == 10


def test_a_viewer_reads_apps_but_cannot_manage_them(acme: Tenant) -> None:
    factories.data_source(acme.organization, "HR")
    app = App.objects.create(organization=acme.organization, name="Answers")
    client, url = acme.client("viewer"), f"/v1/flow/apps/{app.pk}"
    assert client.get("/v1/flow/apps").status_code == 200 and client.get(url).status_code == 200
    for response in (
        client.post("/v1/flow/apps", {"name": "B", "data_sources": ["HR"]}, format="json"),
        client.patch(url, {"top_k": 1}, format="json"),
        client.delete(url),
    ):
        _error(response, 403, "permission_denied", None)
    assert App.objects.get().top_k == 10


# API keys


def test_an_admin_makes_lists_and_revokes_a_key_whose_secret_is_shown_once(
    acme: Tenant, schema: dict
) -> None:
    admin = acme.client("admin")
    created = _documented(
        schema,
        admin.post("/v1/flow/api-keys", {"role": "editor", "name": "robot"}, format="json"),
        "/v1/flow/api-keys",
        "post",
        201,
    )
    secret = created["key"]
    assert secret.startswith(f"pvk_{created['prefix']}_") and created["role"] == "editor"
    robot = _client(secret)
    assert robot.post("/v1/flow/data-sources", {"name": "HR"}, format="json").status_code == 201

    listed = _documented(schema, admin.get("/v1/flow/api-keys"), "/v1/flow/api-keys", "get", 200)
    mine = next(k for k in listed["data"] if k["id"] == created["id"])
    assert mine == {key: value for key, value in created.items() if key != "key"} | {
        "last_used_at": mine["last_used_at"]
    }
    assert mine["last_used_at"] is not None
    stored = ApiKey.objects.get(pk=created["id"])
    assert stored.key_hash not in str(listed) and secret not in str(listed)
    assert len(listed["data"]) == 5

    revoke_path = "/v1/flow/api-keys/{key_id}/revoke"
    revoked = _documented(
        schema, admin.post(f"/v1/flow/api-keys/{created['id']}/revoke"), revoke_path, "post", 200
    )
    assert revoked["revoked_at"] is not None
    for response in (robot.get("/v1/flow/data-sources"), robot.get("/v1/flow/api-keys")):
        _error(response, 401, "invalid_api_key", None)
    again = admin.post(f"/v1/flow/api-keys/{created['id']}/revoke")
    _error(again, 409, "already_revoked", "key_id")


@pytest.mark.parametrize("role", ["viewer", "editor", "officer"])
def test_only_an_admin_manages_keys(acme: Tenant, role: str) -> None:
    client = acme.client(role)
    victim = ApiKey.objects.get(organization=acme.organization, role="admin")
    for response in (
        client.get("/v1/flow/api-keys"),
        client.post("/v1/flow/api-keys", {"role": "viewer"}, format="json"),
        client.post(f"/v1/flow/api-keys/{victim.pk}/revoke"),
    ):
        _error(response, 403, "permission_denied", None)
        assert "manage members and API keys" in response.json()["error"]["message"]
    assert ApiKey.objects.filter(revoked_at__isnull=True).count() == 4


@pytest.mark.parametrize(
    ("body", "code", "param"),
    [
        ({}, "invalid", "role"),
        ({"role": "root"}, "invalid", "role"),
        ({"role": 3}, "invalid", "role"),
        ({"role": "viewer", "name": "n" * 201}, "invalid", "name"),
        ({"role": "viewer", "name": 7}, "invalid", "name"),
        (["viewer"], "invalid_body", None),
    ],
)
def test_malformed_key_input_is_a_400(
    acme: Tenant, body: object, code: str, param: str | None
) -> None:
    response = acme.client("admin").post("/v1/flow/api-keys", body, format="json")
    _error(response, 400, code, param)
    assert ApiKey.objects.count() == 4


def test_another_tenants_key_cannot_be_revoked(acme: Tenant, globex: Tenant) -> None:
    theirs = ApiKey.objects.get(organization=globex.organization, role="editor")
    client = acme.client("admin")
    for key_id in (str(theirs.pk), "999999", "x1", "٣", "9" * 30):
        _error(client.post(f"/v1/flow/api-keys/{key_id}/revoke"), 404, "not_found", "key_id")
    assert [k["role"] for k in client.get("/v1/flow/api-keys").json()["data"]].count("editor") == 1
    assert ApiKey.objects.get(pk=theirs.pk).revoked_at is None


# no key, a bad key


ENDPOINTS = [
    ("get", "/v1/flow/data-sources"),
    ("post", "/v1/flow/data-sources"),
    ("get", f"/v1/flow/data-sources/{UNKNOWN}"),
    ("patch", f"/v1/flow/data-sources/{UNKNOWN}"),
    ("delete", f"/v1/flow/data-sources/{UNKNOWN}"),
    ("get", f"/v1/flow/data-sources/{UNKNOWN}/files"),
    ("get", "/v1/flow/apps"),
    ("post", "/v1/flow/apps"),
    ("get", f"/v1/flow/apps/{UNKNOWN}"),
    ("patch", f"/v1/flow/apps/{UNKNOWN}"),
    ("delete", f"/v1/flow/apps/{UNKNOWN}"),
    ("get", "/v1/flow/api-keys"),
    ("post", "/v1/flow/api-keys"),
    ("post", "/v1/flow/api-keys/1/revoke"),
]


@pytest.mark.parametrize(("method", "url"), ENDPOINTS)
@pytest.mark.parametrize("key", [None, "pvk_000000000000_forged"])
def test_without_a_valid_key_every_endpoint_answers_401(
    method: str, url: str, key: str | None
) -> None:
    response = getattr(_client(key), method)(url, {}, format="json")
    assert response.status_code == 401
    error = response.json()["error"]
    assert error["type"] == "authentication_error"
    assert error["code"] in {"not_authenticated", "invalid_api_key"}
    assert response["WWW-Authenticate"] == 'Bearer realm="provenance"'
