"""The role matrix over every operation of the OpenAPI schema.

The schema integrators generate clients from is walked, not a list kept here: for
each operation the view that serves it states its rule (``role_actions``: the
action of each method; ``role_reach``: whose records it reaches, core.roles), and
the expected answer of every caller comes from the rulebook itself
(``role_allows``, ``role_reaches``). An operation the schema gains without a rule
fails here, and so does one without a request this test knows how to make.

Each operation is asked, with a minimal valid body, about records owned by another
caller of the same organization (the ``owner``, a viewer key), by a key of each
role, by the owner itself, by nobody and by another organization's admin:

* the role's action refused → 403 (nobody: 401 or 403);
* a record out of the role's reach → 404 (another organization: 404 always);
* allowed → anything but 401, 403, 404 or a 5xx.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import resolve
from pytest_django import DjangoDbBlocker

from citations.llm_apps import app_create
from citations.models import Message, QueryExecution, ResponseRecord, Run
from citations.responses import services as responses
from citations.services import query_execute
from citations.threads import run_steps
from citations.threads import services as threads
from core.api_keys import api_key_create
from core.permissions import Reader, view_reach
from core.roles import Action, Reach, role_allows, role_reaches
from documents.models import Chunk
from tests import factories
from tests.support.office import QUESTION, ROLES, Office, office_fixture
from tests.support.openapi import generated_schema

pytestmark = pytest.mark.django_db

OWNER = "colleague"  # a viewer key: the records below are its
CALLERS = (*ROLES, OWNER)
# path parameters that name a record its asker owns (the others: the organization's)
OWNED = frozenset({"query_id", "query_execution_id", "thread_id", "response_id"})
SCHEMA = generated_schema()
OPERATIONS = sorted(
    (path, method.upper(), operation["operationId"])
    for path, item in SCHEMA["paths"].items()
    for method, operation in item.items()
)


@dataclass
class Owned:
    """The office, and what the owner asked in it: an answer, a thread with a message
    and a finished run (its steps), a response."""

    office: Office
    chunk: Chunk
    answer: QueryExecution
    thread_id: str
    message_id: str
    run_id: str
    step_id: str
    response_id: str

    @property
    def owner(self) -> Any:
        return self.office.key_rows[OWNER]


@pytest.fixture(scope="module")
def owned(django_db_setup: None, django_db_blocker: DjangoDbBlocker) -> Iterator[Owned]:
    for office in office_fixture(django_db_blocker):
        with django_db_blocker.unblock():
            yield _owned(office)


def _owned(office: Office) -> Owned:
    owner = office.key_rows[OWNER]
    answer = query_execute(app=office.app, question=QUESTION, api_key=owner)
    thread = threads.thread_create(organization=office.acme, api_key=owner)
    message = threads.message_create(thread=thread, role="user", content=QUESTION)
    run = Run.objects.create(thread=thread, app=office.app, question=message, caller_api_key=owner)
    threads.run_execute(run_id=str(run.pk))  # in this process: no worker, no broker
    run.refresh_from_db()
    response = _response(office)
    return Owned(
        office=office,
        chunk=Chunk.objects.filter(file=office.file).order_by("position").first() or _none(),
        answer=answer,
        thread_id=str(thread.pk),
        message_id=str(message.pk),
        run_id=str(run.pk),
        step_id=run_steps.run_steps_of(run=run)[0].id,
        response_id=str(response.pk),
    )


def _none() -> Chunk:
    raise AssertionError("the ready file has no chunk")


def _response(office: Office) -> ResponseRecord:
    owner = office.key_rows[OWNER]
    asked = responses.response_request_parse(
        organization=office.acme,
        body={"model": str(office.app.pk), "input": QUESTION},
        reader=Reader(user_id=None, api_key_id=owner.pk, role=owner.role),
    )
    record = responses.response_start(
        organization=office.acme, request=asked, user=None, api_key=owner
    )
    return responses.response_execute(response_id=record.pk)


# --- the ids a request names: the owner's records, or fresh ones it would change ----------


def _fresh_thread(owned: Owned) -> dict[str, str]:
    thread = threads.thread_create(organization=owned.office.acme, api_key=owned.owner)
    message = threads.message_create(thread=thread, role="user", content=QUESTION)
    return {"thread_id": str(thread.pk), "message_id": str(message.pk)}


def _fresh_response(owned: Owned) -> str:
    office = owned.office
    record = ResponseRecord.objects.create(
        organization=office.acme, app=office.app, question=QUESTION, caller_api_key=owned.owner
    )
    return str(record.pk)


def _fresh_file(owned: Owned) -> str:
    name = f"note-{uuid.uuid4().hex[:8]}.md"
    return str(factories.upload(owned.office.source, name, b"# Note\n\nShort.\n").file.pk)


def _ids(owned: Owned, method: str) -> dict[str, object]:
    """Every path parameter's value for a request of ``method``: what a write would
    change (delete, cancel, revoke) is made fresh for it, the rest is shared."""
    office, writes = owned.office, method != "GET"
    ids: dict[str, object] = {
        "llm_app_id": office.app.pk,
        "app_id": office.app.pk,
        "query_id": owned.answer.pk,
        "query_execution_id": owned.answer.pk,
        "thread_id": owned.thread_id,
        "message_id": owned.message_id,
        "run_id": owned.run_id,
        "step_id": owned.step_id,
        "response_id": owned.response_id,
        "file_id": office.file.pk,
        "data_source_id": office.source.pk,
        "database_id": office.source.vector_database_id,
        "chunk_id": owned.chunk.pk,
    }
    if method == "DELETE":
        ids |= _fresh_thread(owned)
        ids["response_id"] = _fresh_response(owned)
        ids["data_source_id"] = factories.data_source(office.acme, _unique("Empty")).pk
        ids["app_id"] = app_create(
            organization=office.acme, name=_unique("Unused"), data_source_names=["Handbook"]
        ).pk
    if writes:
        ids["file_id"] = _fresh_file(owned)
        ids["key_id"] = api_key_create(organization=office.acme, role="viewer")[0].pk
    return ids


def _unique(prefix: str) -> str:
    return f"{prefix} {uuid.uuid4().hex[:8]}"


# --- the minimal valid body of each operation that takes one ------------------------------

Body = Callable[[Owned], tuple[str, object]]
JSON = "application/json"


def _json(body: dict[str, object] | Callable[[Owned], dict[str, object]]) -> Body:
    return lambda owned: (JSON, body(owned) if callable(body) else body)


def _upload(owned: Owned) -> tuple[str, object]:
    name = f"matrix-{uuid.uuid4().hex[:8]}.txt"
    return "multipart", {"data_source": "Handbook", "file": SimpleUploadedFile(name, b"A line.\n")}


BODIES: dict[str, Body] = {
    "semantics_apps_query_executions_create": _json({"query": QUESTION}),
    "v1_citations_validate_create": _json({"citations": []}),
    "v1_flow_api_keys_create": _json({"role": "viewer"}),
    "v1_flow_apps_create": _json(lambda o: {"name": _unique("App"), "data_sources": ["Handbook"]}),
    "v1_flow_apps_update": _json({"prompt": "Answer briefly."}),
    "v1_flow_data_sources_create": _json(lambda o: {"name": _unique("Source")}),
    "v1_flow_data_sources_rename": _json(lambda o: {"name": _unique("Renamed")}),
    "v1_flow_files_create": _upload,
    "v1_flow_files_destroy": _json({"reason": "Superseded by the new charter"}),
    "v1_flow_files_cancel_create": _json({}),
    "v1_responses_create": _json(lambda o: {"model": str(o.office.app.pk), "input": QUESTION}),
    "v1_responses_destroy": _json({"reason": "matrix"}),
    "v1_threads_create": _json({}),
    "v1_threads_destroy": _json({"reason": "matrix"}),
    "v1_threads_messages_create": _json({"role": "user", "content": "And after that?"}),
    "v1_threads_messages_destroy": _json({"reason": "matrix"}),
    "v1_threads_runs_create": _json(lambda o: {"assistant_id": str(o.office.app.pk)}),
}


def _takes_a_body(path: str, method: str) -> bool:
    operation = SCHEMA["paths"][path][method.lower()]
    body = operation.get("requestBody")
    if body is None:
        return False
    if body.get("required"):
        return True
    content = next(iter(body["content"].values()))["schema"]
    name = content.get("$ref", "").rsplit("/", 1)[-1]
    return bool(SCHEMA["components"]["schemas"].get(name, {}).get("required"))


# --- the rule of an operation, as its view states it --------------------------------------


@dataclass(frozen=True)
class Rule:
    action: Action | None
    reach: Reach
    names: frozenset[str]  # its path parameters

    @property
    def names_owned(self) -> bool:
        return bool(self.names & OWNED)

    def expected(self, role: str, *, own: bool) -> str:
        """ "allowed", "403" or "404", for a key of ``role`` (``own``: the owner's)."""
        if self.action is None or not role_allows(role, self.action):
            return "403"
        if self.names_owned and not role_reaches(role, self.reach, own=own):
            return "404"
        return "allowed"


def _rule(path: str, method: str) -> Rule:
    names = frozenset(re.findall(r"\{(\w+)\}", path))
    concrete = re.sub(r"\{\w+\}", lambda m: str(uuid.uuid4()), path)
    view = resolve(concrete).func.view_class  # type: ignore[attr-defined]
    action = (getattr(view, "role_actions", None) or {}).get(method)
    return Rule(action=action, reach=view_reach(view, method), names=names)


def test_every_operation_of_the_schema_has_a_rule_and_a_request() -> None:
    assert len(OPERATIONS) >= 40, "the schema was not walked"
    missing = []
    for path, method, operation_id in OPERATIONS:
        if _rule(path, method).action is None:
            missing.append(f"{method} {path}: its view states no role_actions[{method!r}]")
        if _takes_a_body(path, method) and operation_id not in BODIES:
            missing.append(f"{method} {path}: no minimal body in BODIES[{operation_id!r}]")
    assert not missing, "\n".join(missing)
    assert set(BODIES) <= {operation_id for _, _, operation_id in OPERATIONS}


def test_the_rulebook_reaches_records_as_documented() -> None:
    """The reach rule in words (docs/api.md, docs/operations.md): viewers and editors
    read their own, officers and admins every one; only the asker writes into it."""
    reading = {role: role_reaches(role, Reach.READ, own=False) for role in ROLES}
    assert reading == {"viewer": False, "editor": False, "officer": True, "admin": True}
    assert not any(role_reaches(role, Reach.OWN, own=False) for role in ROLES)
    assert all(role_reaches(role, reach, own=True) for role in ROLES for reach in Reach)
    deleting = {role: role_allows(role, Action.DELETE_CONVERSATIONS) for role in ROLES}
    assert deleting == {"viewer": False, "editor": True, "officer": False, "admin": True}


def test_the_rules_keep_the_roles_promises() -> None:
    """What the views declare keeps DESIGN.md's word: a viewer asks and reads its own,
    an officer reads every answer and changes nothing, deleting is the editor's or
    admin's; so a view declaring a looser rule fails here, not only in the matrix."""
    broken = []
    for path, method, _ in OPERATIONS:
        rule = _rule(path, method)
        assert rule.action is not None, f"{method} {path} has no rule"
        where = f"{method} {path} ({rule.action}, {rule.reach})"
        if method == "DELETE" and (
            role_allows("viewer", rule.action) or role_allows("officer", rule.action)
        ):
            broken.append(f"{where}: viewers or officers may delete")
        if method != "GET" and role_allows("officer", rule.action) != role_allows(
            "viewer", rule.action
        ):
            broken.append(f"{where}: an officer changes what a viewer may not")
        if rule.names_owned and method == "GET" and rule.reach != Reach.READ:
            broken.append(f"{where}: reads an asker's record beyond the READ reach")
        writes = rule.names_owned and method == "POST" and role_allows("viewer", rule.action)
        if writes and rule.reach == Reach.ORGANIZATION:
            broken.append(f"{where}: a viewer writes into another's record")
    assert not broken, "\n".join(broken)


# --- the table the docs show ---------------------------------------------------------------

DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"
TABLE_START, TABLE_END = "<!-- role-matrix:start -->", "<!-- role-matrix:end -->"


def _cell(rule: Rule, role: str) -> str:
    if rule.action is None or not role_allows(role, rule.action):
        return "—"
    if not rule.names_owned or rule.reach == Reach.ORGANIZATION:
        return "yes"
    return "all" if role_reaches(role, rule.reach, own=False) else "own"


def role_table() -> str:
    """docs/api.md's table of role × operation, written from the rulebook."""
    lines = [
        "| method | path | action | " + " | ".join(ROLES) + " |",
        "|---|---|---|" + "---|" * len(ROLES),
    ]
    for path, method, _ in OPERATIONS:
        rule = _rule(path, method)
        cells = " | ".join(_cell(rule, role) for role in ROLES)
        lines.append(f"| {method} | `{path}` | {rule.action} | {cells} |")
    return "\n".join(lines)


def test_the_docs_table_is_the_rulebook() -> None:
    text = DOCS.read_text()
    shown = text.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0].strip()
    assert shown == role_table(), "docs/api.md's role table is stale; it should read:\n" + (
        role_table()
    )


# --- asking ---------------------------------------------------------------------------------


def _request(owned: Owned, key: str | None, path: str, method: str, operation_id: str) -> Any:
    url = path.format(**_ids(owned, method))
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}") if key else Client()
    send = getattr(client, method.lower())
    kind, body = BODIES[operation_id](owned) if operation_id in BODIES else (JSON, None)
    if kind == "multipart":
        return send(url, body)
    if body is None:
        return send(url)
    return send(url, json.dumps(body), content_type=JSON)


def _outcome(status: int) -> str:
    if status >= 500:
        return f"{status} (a server error)"
    return str(status) if status in (401, 403, 404) else "allowed"


@pytest.mark.parametrize(
    ("path", "method", "operation_id"), OPERATIONS, ids=[f"{m} {p}" for p, m, _ in OPERATIONS]
)
def test_every_caller_gets_what_the_rulebook_says(
    owned: Owned, path: str, method: str, operation_id: str
) -> None:
    rule = _rule(path, method)
    assert rule.action is not None, f"{method} {path} has no rule"
    keys = owned.office.keys
    wrong = []
    for caller in CALLERS:
        role = owned.office.key_rows[caller].role
        expected = rule.expected(role, own=caller == OWNER)
        response = _request(owned, keys[caller], path, method, operation_id)
        got = _outcome(response.status_code)
        if got != expected:
            wrong.append(f"{caller} ({role}): {got}, the rulebook says {expected}")
    nobody = _request(owned, None, path, method, operation_id).status_code
    if nobody not in (401, 403):
        wrong.append(f"no credentials: {nobody}, should be 401 or 403")
    if rule.names:  # it names a record of Acme's: Globex's admin does not find it
        stranger = _request(owned, owned.office.stranger_key, path, method, operation_id)
        if stranger.status_code != 404:
            wrong.append(f"another organization's admin: {stranger.status_code}, not 404")
    assert not wrong, f"{method} {path}:\n" + "\n".join(wrong)


def test_a_refused_deletion_leaves_the_record_and_an_allowed_one_only_marks_it(
    owned: Owned,
) -> None:
    """The matrix's deletions changed nothing they were refused, and erased nothing."""
    ids = _fresh_thread(owned)
    path = f"/v1/threads/{ids['thread_id']}/messages/{ids['message_id']}"
    viewer = Client(HTTP_AUTHORIZATION=f"Bearer {owned.office.keys['viewer']}")
    assert viewer.delete(path).status_code == 403
    assert Message.objects.get(pk=ids["message_id"]).deleted_at is None
    editor = Client(HTTP_AUTHORIZATION=f"Bearer {owned.office.keys['editor']}")
    assert editor.delete(path).status_code == 200
    assert Message.objects.filter(pk=ids["message_id"], deleted_at__isnull=False).exists()
