"""The role matrix: every route the URL configuration exposes, asked by every role.

Each route has a rule below: which roles may use each method (web pages and the
REST API), or which admin permissions a model's pages need. The test walks the
URL configuration itself, so a route added without a rule fails it. Every role
then asks every route (API keys carry the role on the REST API, members on the
web pages and the admin), and the answer must be a refusal (401, 403, or the
sign-in page) exactly for the roles the rule leaves out. A member of another
organization asking for this organization's records gets a refusal or a 404,
never the record.

Write requests carry an empty or invalid body where the gate is what is tested:
permissions are checked before the body is read, so a 400 proves the caller
passed the gate without changing anything.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import models
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from citations.llm_apps import app_create
from citations.models import App, QueryExecution
from citations.services import query_execute
from core.admin_scoping import OrganizationScopedAdmin
from core.api_keys import api_key_create
from documents.models import Chunk, DataSource, File, Organization, OrganizationMember
from tests import factories
from tests.web.conftest import REMOTE_WORK, ingest_now

ROLES = ("viewer", "editor", "officer", "admin")
ALL = frozenset(ROLES)
WRITERS = frozenset({"editor", "admin"})
AUDITORS = frozenset({"officer", "admin"})
ADMINS = frozenset({"admin"})
STAFF = frozenset({"editor", "officer", "admin"})  # roles whose work includes the admin
NOBODY: frozenset[str] = frozenset()
PUBLIC = "public"  # open to anyone, signed in or not: checked to answer, not to refuse


@dataclass
class World:
    """Acme with a member and a key of each role, a ready document, an answer of each
    member; Globex with an admin (the outsider)."""

    acme: Organization
    source: DataSource
    app: App
    file: File
    chunk: Chunk
    members: dict[str, User]
    keys: dict[str, str]
    answers: dict[str, QueryExecution]
    outsider: User
    outsider_key: str
    threads: dict[str, str] = field(default_factory=dict)

    def fresh_file(self) -> File:
        """A new pending file, for a request that would change the one it names."""
        name = f"note-{uuid.uuid4().hex[:8]}.md"
        return factories.upload(self.source, name, b"# Note\n\nA short note.\n").file


@dataclass(frozen=True)
class Rule:
    """Which roles may use each method of a route; ``kwargs`` fills its path for a role."""

    methods: dict[str, frozenset[str] | str]
    kwargs: Callable[[World, str], dict[str, object]] = lambda world, role: {}
    acme_record: bool = False  # the path names one of Acme's records: outsiders must not see it
    body: object = None


def _answer(world: World, role: str) -> dict[str, object]:
    return {"query_id": world.answers[role].pk}


def _quoted(world: World, role: str) -> dict[str, object]:
    return {**_answer(world, role), "quoted_as": "1"}


def _file(world: World, role: str) -> dict[str, object]:
    return {"file_id": world.file.pk}


def _document(world: World, role: str) -> dict[str, object]:
    return {"document_id": world.file.document_id}


def _fresh(world: World, role: str) -> dict[str, object]:
    return {"file_id": world.fresh_file().pk}


def _app(world: World, role: str) -> dict[str, object]:
    return {"llm_app_id": world.app.pk}


def _app_answer(world: World, role: str) -> dict[str, object]:
    return {"llm_app_id": world.app.pk, "query_id": world.answers["viewer"].pk}


def _thread(world: World, role: str) -> dict[str, object]:
    return {"thread_id": world.threads[role]}


def _source(world: World, role: str) -> dict[str, object]:
    return {"data_source_id": world.source.pk}


def _fresh_key(world: World, role: str) -> dict[str, object]:
    """A new key of Acme's, for a revocation that would end the one it names."""
    return {"key_id": api_key_create(organization=world.acme, role="viewer")[0].pk}


def _fresh_thread(world: World, role: str) -> dict[str, object]:
    """A new thread of ``role``'s key, for a deletion that would hide the one it names."""
    key = world.outsider_key if role == "outsider" else world.keys[role]
    response = Client(HTTP_AUTHORIZATION=f"Bearer {key}").post(
        "/v1/threads", "{}", content_type="application/json"
    )
    return {"thread_id": response.json()["id"]}


_UNKNOWN_RUN = "run_" + "0" * 24  # past the gate, a run that is not there answers 404

# the web pages and the REST API: route name → {method: roles that may}
ROUTES: dict[str, Rule] = {
    "healthz": Rule({"GET": PUBLIC}),
    "openapi-schema": Rule({"GET": PUBLIC}),
    "api-docs": Rule({"GET": PUBLIC}),
    "login": Rule({"GET": PUBLIC}),
    "logout": Rule({"POST": PUBLIC}),
    # the library and the answer pages
    "web-library": Rule({"GET": ALL, "POST": WRITERS}),
    "web-file-retry": Rule({"POST": WRITERS}, _file, acme_record=True),
    "web-upload-one": Rule({"POST": WRITERS}),
    "web-file-download": Rule({"GET": ALL}, _file, acme_record=True),
    "web-document": Rule({"GET": ALL}, _document, acme_record=True),
    # a POST without a reason passes the gate and deletes nothing (400)
    "web-document-delete": Rule({"GET": WRITERS, "POST": WRITERS}, _document, acme_record=True),
    "web-ask": Rule({"GET": ALL, "POST": ALL}),
    "web-ask-stream": Rule({"POST": ALL}),
    "web-answer": Rule({"GET": ALL}, _answer, acme_record=True),
    "web-follow-up": Rule({"POST": ALL}, _answer, acme_record=True),
    "web-feedback": Rule({"POST": ALL}, _answer, acme_record=True),
    "web-source": Rule({"GET": ALL}, _quoted, acme_record=True),
    "web-source-crop": Rule({"GET": ALL}, _quoted, acme_record=True),
    "web-hit": Rule({"GET": ALL}, lambda w, r: {**_answer(w, r), "k_pos": 1}, acme_record=True),
    "web-history": Rule({"GET": ALL}),
    "web-page-image": Rule({"GET": ALL}, lambda w, r: {**_file(w, r), "number": 1}, True),
    # files and chunks
    "file-upload": Rule({"POST": WRITERS}),
    "file-detail": Rule({"GET": ALL, "DELETE": WRITERS}, _fresh, acme_record=True),
    "file-cancel": Rule({"POST": WRITERS}, _fresh, acme_record=True),
    "file-content": Rule({"GET": ALL}, _file, acme_record=True),
    "file-markdown": Rule({"GET": ALL}, _file, acme_record=True),
    "chunk-detail": Rule(
        {"GET": ALL},
        lambda w, r: {"database_id": w.source.vector_database_id, "chunk_id": w.chunk.pk},
        acme_record=True,
    ),
    # management (documents/api/management/): the data source holds a file and the
    # app has answers, so a DELETE that passes the gate answers 409 and deletes nothing
    "data-source-list": Rule({"GET": ALL, "POST": WRITERS}),
    "data-source-detail": Rule(
        {"GET": ALL, "PATCH": WRITERS, "DELETE": WRITERS}, _source, acme_record=True
    ),
    "data-source-files": Rule({"GET": ALL}, _source, acme_record=True),
    "app-list": Rule({"GET": ALL, "POST": WRITERS}),
    "app-detail": Rule(
        {"GET": ALL, "PATCH": WRITERS, "DELETE": WRITERS},
        lambda w, r: {"app_id": w.app.pk},
        acme_record=True,
    ),
    "api-key-list": Rule({"GET": ADMINS, "POST": ADMINS}),
    "api-key-revoke": Rule({"POST": ADMINS}, _fresh_key, acme_record=True),
    # the source-citation API, the validator, threads and responses: asking
    "query-executions": Rule({"POST": ALL}, _app, acme_record=True),
    "query-execution-detail": Rule({"GET": ALL}, _app_answer, acme_record=True),
    "query-execution-validation": Rule({"GET": ALL}, _app_answer, acme_record=True),
    "query-execution-reasoning": Rule({"GET": ALL}, _app_answer, acme_record=True),
    "query-execution-citations-markdown": Rule({"GET": ALL}, _app_answer, acme_record=True),
    "query-execution-citations": Rule(
        {"POST": ALL},
        lambda w, r: {"llm_app_id": w.app.pk, "query_execution_id": w.answers["viewer"].pk},
        acme_record=True,
    ),
    "quoted-sources": Rule({"GET": ALL}, _app_answer, acme_record=True),
    "citations-validate": Rule({"POST": ALL}),
    "threads": Rule({"POST": ALL}),
    # deleting: a fresh thread each time, so the others' requests still find theirs
    "thread-detail": Rule({"GET": ALL, "DELETE": WRITERS}, _fresh_thread, acme_record=True),
    "thread-messages": Rule({"GET": ALL, "POST": ALL}, _thread, acme_record=True),
    "thread-message-detail": Rule(
        {"GET": ALL, "DELETE": WRITERS},
        lambda w, r: {**_thread(w, r), "message_id": "msg_" + "0" * 24},
    ),
    "thread-runs": Rule({"GET": ALL, "POST": ALL}, _thread, acme_record=True),
    "thread-run-detail": Rule({"GET": ALL}, lambda w, r: {**_thread(w, r), "run_id": _UNKNOWN_RUN}),
    "thread-run-cancel": Rule(
        {"POST": ALL}, lambda w, r: {**_thread(w, r), "run_id": _UNKNOWN_RUN}
    ),
    "thread-run-steps": Rule({"GET": ALL}, lambda w, r: {**_thread(w, r), "run_id": _UNKNOWN_RUN}),
    "thread-run-step-detail": Rule(
        {"GET": ALL},
        lambda w, r: {**_thread(w, r), "run_id": _UNKNOWN_RUN, "step_id": "step_" + "0" * 24},
    ),
    "responses": Rule({"POST": ALL}),
    "response-detail": Rule(
        {"GET": ALL, "DELETE": WRITERS}, lambda w, r: {"response_id": "resp_" + "0" * 24}
    ),
}

# the admin's pages of a model, by the permissions its rows need: model → verb → roles
VIEW, ADD, CHANGE, DELETE = "view", "add", "change", "delete"
_AUDIT_ONLY = {VIEW: AUDITORS, ADD: NOBODY, CHANGE: NOBODY, DELETE: NOBODY}
ADMIN_MODELS: dict[str, dict[str, frozenset[str]]] = {
    "auth.user": {VIEW: NOBODY, ADD: NOBODY, CHANGE: NOBODY, DELETE: NOBODY},
    "auth.group": {VIEW: NOBODY, ADD: NOBODY, CHANGE: NOBODY, DELETE: NOBODY},
    "documents.organization": {VIEW: AUDITORS, ADD: NOBODY, CHANGE: ADMINS, DELETE: NOBODY},
    "documents.organizationmember": {VIEW: AUDITORS, ADD: ADMINS, CHANGE: ADMINS, DELETE: ADMINS},
    "documents.apikey": {VIEW: AUDITORS, ADD: NOBODY, CHANGE: ADMINS, DELETE: ADMINS},
    "documents.datasource": {VIEW: STAFF, ADD: WRITERS, CHANGE: WRITERS, DELETE: WRITERS},
    "documents.file": {VIEW: STAFF, ADD: NOBODY, CHANGE: NOBODY, DELETE: NOBODY},
    "documents.documentmarkdown": _AUDIT_ONLY,
    "documents.chunk": _AUDIT_ONLY,
    "retrieval.vectordatabase": {VIEW: STAFF, ADD: NOBODY, CHANGE: NOBODY, DELETE: NOBODY},
    "citations.app": {VIEW: STAFF, ADD: WRITERS, CHANGE: WRITERS, DELETE: WRITERS},
    **{
        f"citations.{model}": _AUDIT_ONLY
        for model in (
            "queryexecution",
            "quotedsource",
            "claimcitation",
            "retrievalhit",
            "modelcall",
            "claimcheck",
            "reasoningstep",
            "stepsourceattribution",
            "stepclaim",
            "ragtrace",
            "responserecord",
            "thread",
            "run",
            "message",
            "answerfeedback",
            "conversationdeletion",
        )
    },
    "audit.evidenceentry": _AUDIT_ONLY,
    "audit.documentevent": _AUDIT_ONLY,
    "evaluation.evaluationrun": _AUDIT_ONLY,
}


def _content_type(model: type[models.Model]) -> int:
    from django.contrib.contenttypes.models import ContentType

    return ContentType.objects.get_for_model(model).pk


def _run_pk(world: World, role: str) -> dict[str, object]:
    return {"object_id": uuid.uuid4(), "name": "scores"}


# the admin's own pages and the extra pages of its models
ADMIN_ROUTES: dict[str, Rule] = {
    "admin:index": Rule({"GET": STAFF}),
    "admin:login": Rule({"GET": PUBLIC}),
    "admin:logout": Rule({"POST": PUBLIC}),
    "admin:password_change": Rule({"GET": STAFF}),
    "admin:password_change_done": Rule({"GET": STAFF}),
    "admin:jsi18n": Rule({"GET": STAFF}),
    # without a model's field to complete it refuses everyone; with one, Django asks
    # the view permission of that model, ruled in ADMIN_MODELS
    "admin:autocomplete": Rule({"GET": NOBODY}),
    "admin:view_on_site": Rule(
        {"GET": STAFF},
        lambda w, r: {"content_type_id": _content_type(File), "object_id": w.file.pk},
    ),
    "admin:auth_user_password_change": Rule(
        {"GET": NOBODY}, lambda w, r: {"id": w.members["viewer"].pk}
    ),
    "admin:app_list": Rule({"GET": STAFF}, lambda w, r: {"app_label": "documents"}),
    "admin:documents_file_download": Rule({"GET": STAFF}, _file, acme_record=True),
    "admin:citations_queryexecution_report": Rule(
        {"GET": AUDITORS}, lambda w, r: {"object_id": w.answers["viewer"].pk}, acme_record=True
    ),
    "admin:citations_queryexecution_source": Rule(
        {"GET": AUDITORS},
        lambda w, r: {"object_id": w.answers["viewer"].pk, "quoted_as": "1"},
        acme_record=True,
    ),
    "admin:citations_queryexecution_source_crop": Rule(
        {"GET": AUDITORS},
        lambda w, r: {"object_id": w.answers["viewer"].pk, "quoted_as": "1"},
        acme_record=True,
    ),
    "admin:citations_queryexecution_hit": Rule(
        {"GET": AUDITORS},
        lambda w, r: {"object_id": w.answers["viewer"].pk, "k_pos": 1},
        acme_record=True,
    ),
    "admin:evaluation_evaluationrun_start": Rule({"GET": AUDITORS}),
    "admin:evaluation_evaluationrun_compare": Rule({"GET": AUDITORS}),
    "admin:evaluation_evaluationrun_plot": Rule({"GET": AUDITORS}, _run_pk),
}
# patterns with no name: a model's "<id>/" (redirects to its change page) and the
# admin's catch-all (404 or the sign-in page); both lead to pages ruled above
ADMIN_UNNAMED = ("<path:object_id>/", "(?P<url>.*)$")
MODEL_PAGES = ("changelist", "add", "change", "delete", "history")


def _routes() -> Iterator[tuple[str, str]]:
    """(name, route) of every URL pattern, namespaced like ``reverse`` takes it."""

    def walk(patterns: list, prefix: str, namespace: str | None) -> Iterator[tuple[str, str]]:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                inner = pattern.namespace or namespace
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern), inner)
            elif isinstance(pattern, URLPattern):
                name = f"{namespace}:{pattern.name}" if namespace and pattern.name else pattern.name
                yield str(name or ""), prefix + str(pattern.pattern)

    yield from walk(get_resolver().url_patterns, "", None)


def _model_page(name: str) -> tuple[str, str] | None:
    """("app.model", page) when ``name`` is one of the admin's per-model pages."""
    for model in admin.site._registry:
        opts = model._meta
        for page in MODEL_PAGES:
            if name == f"admin:{opts.app_label}_{opts.model_name}_{page}":
                return opts.label_lower, page
    return None


def test_every_route_has_a_rule() -> None:
    routes = list(_routes())
    assert len(routes) > 100, "the URL configuration was not walked"
    unruled = []
    for name, route in routes:
        if name in ROUTES or name in ADMIN_ROUTES:
            continue
        if name.startswith("admin:") and (page := _model_page(name)) is not None:
            if page[0] not in ADMIN_MODELS:
                unruled.append(f"{name} (admin model {page[0]} has no row in ADMIN_MODELS)")
            continue
        if not name and route.startswith("admin/") and route.endswith(ADMIN_UNNAMED):
            continue
        unruled.append(f"{name or '(unnamed)'}: {route}")
    assert not unruled, "routes without a rule in the role matrix:\n" + "\n".join(unruled)


def test_every_admin_model_has_a_rule_and_every_rule_a_model() -> None:
    registered = {model._meta.label_lower for model in admin.site._registry}
    assert len(registered) > 20
    assert registered == set(ADMIN_MODELS), registered ^ set(ADMIN_MODELS)


@pytest.fixture
def world(db: None) -> World:
    acme, globex = factories.organization("Acme"), factories.organization("Globex")
    source = factories.data_source(acme, "Handbook")
    app = app_create(organization=acme, name="HR", data_source_names=["Handbook"])
    record = ingest_now(factories.upload(source, "remote.md", REMOTE_WORK).file)
    assert record.status == "ready", record.error_message
    users = get_user_model().objects
    members = {}
    for role in ROLES:
        members[role] = users.create_user(f"{role}-user", password="pw-123-456-xyz")
        OrganizationMember.objects.create(organization=acme, user=members[role], role=role)
        members[role].is_staff = role in STAFF  # as core.members would set it
        members[role].save()
    outsider = users.create_user("gina", password="pw-123-456-xyz", is_staff=True)
    OrganizationMember.objects.create(organization=globex, user=outsider, role="admin")
    answers = {
        role: query_execute(
            app=app, question="How many remote days per week?", user=user, origin="web"
        )
        for role, user in members.items()
    }
    assert all(a.quoted_sources.exists() for a in answers.values()), "the answers cite nothing"
    world = World(
        acme=acme,
        source=source,
        app=app,
        file=record,
        chunk=Chunk.objects.filter(file=record).order_by("position").first() or _none(),
        members=members,
        keys={role: api_key_create(organization=acme, role=role)[1] for role in ROLES},
        answers=answers,
        outsider=outsider,
        outsider_key=api_key_create(organization=globex, role="admin")[1],
    )
    for role in [*ROLES, "outsider"]:
        response = _rest(world, role).post("/v1/threads", "{}", content_type="application/json")
        assert response.status_code == 200, response.content
        world.threads[role] = response.json()["id"]
    return world


def _none() -> Chunk:
    raise AssertionError("the ready file has no chunk")


def _rest(world: World, role: str) -> Client:
    key = world.outsider_key if role == "outsider" else world.keys[role]
    return Client(HTTP_AUTHORIZATION=f"Bearer {key}")


def _session(world: World, role: str) -> Client:
    client = Client()
    client.force_login(world.outsider if role == "outsider" else world.members[role])
    return client


def _refused(response: object, path: str) -> bool:
    """401, 403, or a redirect to a sign-in page."""
    status = getattr(response, "status_code", 0)
    location = getattr(response, "headers", {}).get("Location", "")
    return status in (401, 403) or (status == 302 and "login" in location)


def _ask(client: Client, method: str, path: str) -> object:
    """``method`` on ``path`` with an empty body where one is taken."""
    send = getattr(client, method.lower())
    if method in ("POST", "PATCH", "PUT"):
        return send(path, json.dumps({}), content_type="application/json")
    return send(path)


def _check(world: World, name: str, rule: Rule, client_of: Callable) -> list[str]:
    """Every role on every method of one route; the mismatches, in words."""
    wrong = []
    for method, allowed in rule.methods.items():
        for role in ROLES:
            path = reverse(name, kwargs=rule.kwargs(world, role))
            response = _ask(client_of(world, role), method, path)
            status = getattr(response, "status_code", 0)
            if status >= 500:
                wrong.append(f"{method} {path} as {role}: {status}")
            elif allowed == PUBLIC:
                continue  # open to anyone: only that it answers
            elif role in allowed:
                if _refused(response, path):
                    wrong.append(f"{method} {path} as {role}: refused ({status}), should pass")
            elif not _refused(response, path):
                wrong.append(f"{method} {path} as {role}: {status}, should be refused")
        if rule.acme_record and allowed != PUBLIC:
            path = reverse(name, kwargs=rule.kwargs(world, "admin"))
            response = _ask(client_of(world, "outsider"), method, path)
            status = getattr(response, "status_code", 0)
            if not (_refused(response, path) or status == 404):
                wrong.append(f"{method} {path} as another organization's admin: {status}")
    return wrong


def _is_rest(name: str) -> bool:
    route = dict((n, r) for n, r in _routes())[name]
    return route.startswith(("v1/", "semantics/"))


def test_the_web_pages_and_the_rest_api_follow_the_matrix(world: World) -> None:
    names = list(ROUTES)
    assert names
    wrong: list[str] = []
    for name in names:
        client_of = _rest if _is_rest(name) else _session
        wrong += _check(world, name, ROUTES[name], client_of)
    assert not wrong, "\n".join(wrong)


def test_the_rest_api_follows_a_members_role_too(world: World) -> None:
    """Signed in on the site (no key), the REST API reads the member's role."""
    viewer, editor = _session(world, "viewer"), _session(world, "editor")
    upload = reverse("file-upload")
    refused = viewer.post(upload, {"data_source": "Handbook"})
    assert refused.status_code == 403
    assert refused.json()["error"]["type"] == "permission_error"
    assert "viewer" in refused.json()["error"]["message"]
    assert editor.post(upload, {"data_source": "Handbook"}).status_code == 400  # no file


def test_a_viewer_key_upload_answers_403_in_the_error_shape(world: World) -> None:
    response = _rest(world, "viewer").post(
        reverse("file-upload"), {"data_source": "Handbook", "file": _text_upload()}
    )
    assert response.status_code == 403
    error = response.json()["error"]
    assert error["type"] == "permission_error" and error["code"] == "permission_denied"
    assert not File.objects.filter(name="matrix.txt").exists()
    accepted = _rest(world, "editor").post(
        reverse("file-upload"), {"data_source": "Handbook", "file": _text_upload()}
    )
    assert accepted.status_code == 202, accepted.content
    assert File.objects.filter(name="matrix.txt").count() == 1


def _text_upload() -> object:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("matrix.txt", b"A line of text.\n", content_type="text/plain")


def _object_of(world: World, model: type[models.Model]) -> models.Model | None:
    """One of Acme's rows of ``model`` (any row for a model no organization owns)."""
    model_admin = admin.site._registry[model]
    if isinstance(model_admin, OrganizationScopedAdmin):
        path = model_admin.organization_path
        return model._default_manager.filter(**{path: world.acme.pk}).first()
    return model._default_manager.first()


def test_the_admin_follows_the_matrix(world: World) -> None:
    wrong: list[str] = []
    objects_checked = 0
    for model in admin.site._registry:
        label = model._meta.label_lower
        rule = ADMIN_MODELS[label]
        prefix = f"admin:{model._meta.app_label}_{model._meta.model_name}"
        pages: list[tuple[str, dict, frozenset[str]]] = [
            ("changelist", {}, rule[VIEW] | rule[CHANGE]),
            ("add", {}, rule[ADD]),
        ]
        row = _object_of(world, model)
        if row is not None:
            objects_checked += 1
            viewable = rule[VIEW] | rule[CHANGE]
            pages += [
                ("change", {"object_id": row.pk}, viewable),
                ("history", {"object_id": row.pk}, viewable),
                ("delete", {"object_id": row.pk}, rule[DELETE]),
            ]
        for page, kwargs, allowed in pages:
            path = reverse(f"{prefix}_{page}", kwargs=kwargs)
            for role in ROLES:
                status = _session(world, role).get(path).status_code
                # shown (200), or not: refused, or a row their scope does not hold
                # (the admin's redirect to its index, or 404)
                if (status == 200) != (role in allowed) or status not in (200, 302, 403, 404):
                    wrong.append(f"GET {path} as {role}: {status}")
            if row is not None and page != "changelist" and kwargs:
                response = _session(world, "outsider").get(path)
                if response.status_code not in (302, 403, 404):
                    wrong.append(
                        f"GET {path} as another organization's admin: {response.status_code}"
                    )
    assert objects_checked >= 12, f"only {objects_checked} models had a row of Acme to open"
    for name, route_rule in ADMIN_ROUTES.items():
        wrong += _check(world, name, route_rule, _session)
    assert not wrong, "\n".join(wrong)
