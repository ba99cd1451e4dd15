"""A stepped answer on every surface: the REST reasoning endpoint (the document's
output shape, ``include_excerpts``, bad input, other tenants), the end user's answer
page and the officer's evidence page, the admin's and create_app's ``reasoning``."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from citations.llm_apps import AppError, app_create
from citations.models import App, QueryExecution
from citations.services import query_execute
from documents.models import Organization, OrganizationMember
from tests import factories
from tests.citations import steps_support
from tests.citations.steps_support import LEAVE_FACT, PASSWORD_FACT, TWO_FACTS
from tests.support.http import streamed
from tests.support.openapi import assert_documented, generated_schema

steps_library = steps_support.steps_library


@pytest.fixture(scope="module")
def schema() -> dict:
    return generated_schema()


def _api(key: str | None) -> APIClient:
    client = APIClient()
    if key:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def _url(execution: QueryExecution, query: str = "") -> str:
    return f"/semantics/apps/{execution.app_id}/query-executions/{execution.pk}/reasoning{query}"


def _member(org: Organization, *, officer: bool = False, name: str = "olivia") -> Client:
    user = get_user_model().objects.create_user(name, password="pw-123-456", is_staff=officer)
    role = "officer" if officer else "viewer"
    OrganizationMember.objects.create(organization=org, user=user, role=role)
    client = Client()
    client.force_login(user)
    return client


def test_the_reasoning_endpoint_gives_the_steps_and_the_documents_summary(
    steps_library: steps_support.StepsLibrary, schema: dict
) -> None:
    execution = query_execute(app=steps_library.app(), question=TWO_FACTS)

    response = _api(steps_library.key).get(_url(execution))

    assert response.status_code == 200, response.content
    body = response.json()
    assert_documented(
        schema,
        200,
        body,
        "/semantics/apps/{llm_app_id}/query-executions/{query_id}/reasoning",
        "get",
    )
    assert body["reasoning"] == "steps" and body["original_question"] == TWO_FACTS
    assert body["final_answer"] == execution.answer
    first, second = body["reasoning_steps"]
    assert [first["step_number"], second["step_number"]] == [1, 2]
    assert first["intermediate_answer"] == f"{LEAVE_FACT} [1]"
    (source,) = first["source_attributions"]
    assert source["document_id"] == str(steps_library.leave.document_id)
    assert source["document_title"] == "leave-policy.md" and source["excerpt"] == LEAVE_FACT
    assert (source["quoted_as"], source["final_quoted_as"], source["retrieval_rank"]) == (
        "1",
        "1",
        1,
    )
    assert source["chunk_url"].startswith("http://testserver/v1/flow/vectordb/")
    assert second["source_attributions"][0]["final_quoted_as"] == "2"
    summary = body["source_summary"]
    assert set(summary) == {"total_sources", "primary_sources", "step_breakdown"}
    assert summary["total_sources"] == 2
    assert summary["step_breakdown"] == {
        "step_1": {
            "step_number": 1,
            "sources_used": 1,
            "document_ids": [str(steps_library.leave.document_id)],
        },
        "step_2": {
            "step_number": 2,
            "sources_used": 1,
            "document_ids": [str(steps_library.security.document_id)],
        },
    }
    assert {p["title"] for p in summary["primary_sources"]} == {
        "leave-policy.md",
        "security-policy.md",
    }
    assert all(
        set(p) == {"document_id", "title", "relevance", "excerpt"}
        for p in summary["primary_sources"]
    )
    assert {p["excerpt"] for p in summary["primary_sources"]} == {LEAVE_FACT, PASSWORD_FACT}


def test_include_excerpts_false_leaves_them_out(steps_library: steps_support.StepsLibrary) -> None:
    execution = query_execute(app=steps_library.app(), question=TWO_FACTS)

    body = _api(steps_library.key).get(_url(execution, "?include_excerpts=false")).json()

    assert all(p["excerpt"] is None for p in body["source_summary"]["primary_sources"])
    attributions = [a for s in body["reasoning_steps"] for a in s["source_attributions"]]
    assert attributions and all(a["excerpt"] is None for a in attributions)


def test_a_single_step_apps_answer_says_single(steps_library: steps_support.StepsLibrary) -> None:
    app = steps_library.app(reasoning="single", name="single")
    execution = query_execute(app=app, question=TWO_FACTS)

    body = _api(steps_library.key).get(_url(execution)).json()

    assert body["reasoning"] == "single" and body["reasoning_steps"] == []
    assert body["source_summary"] == {
        "total_sources": 0,
        "primary_sources": [],
        "step_breakdown": {},
    }


@pytest.mark.parametrize("value", ["maybe", "", "yes please", "2"])
def test_a_bad_include_excerpts_is_a_400_in_the_error_shape(
    steps_library: steps_support.StepsLibrary, value: str
) -> None:
    execution = query_execute(app=steps_library.app(), question=TWO_FACTS)

    response = _api(steps_library.key).get(_url(execution, f"?include_excerpts={value}"))

    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "message": "include_excerpts must be true or false",
            "type": "invalid_request_error",
            "param": "include_excerpts",
            "code": "invalid_include_excerpts",
        }
    }


def test_another_tenant_and_anonymous_callers_cannot_read_the_steps(
    steps_library: steps_support.StepsLibrary,
) -> None:
    execution = query_execute(app=steps_library.app(), question=TWO_FACTS)
    other = factories.api_key(factories.organization("Globex"))

    assert _api(other).get(_url(execution)).status_code == 404
    assert _api(None).get(_url(execution)).status_code == 401
    bad_id = f"/semantics/apps/{execution.app_id}/query-executions/not-a-uuid/reasoning"
    assert _api(steps_library.key).get(bad_id).status_code == 404
    assert _api(steps_library.key).get(bad_id).json()["error"]["code"]


def test_the_answer_page_shows_how_the_answer_was_found(
    steps_library: steps_support.StepsLibrary,
) -> None:
    app = steps_library.app()
    client = _member(steps_library.organization)

    response = client.post("/", {"app": str(app.pk), "question": TWO_FACTS})
    body = client.get(response["Location"]).content.decode()

    assert 'id="reasoning"' in body and "How this answer was found" in body
    assert "How many days of annual leave do full-time employees receive?" in body
    assert "How often must passwords be changed?" in body
    execution = QueryExecution.objects.get(question=TWO_FACTS)
    viewer = f"/answers/{execution.pk}/sources/2/"
    assert f'href="{viewer}' in body and 'id="primary-sources"' in body
    assert client.get(viewer).status_code == 200


def test_a_single_step_answer_page_has_no_steps(steps_library: steps_support.StepsLibrary) -> None:
    app = steps_library.app(reasoning="single", name="single")
    client = _member(steps_library.organization)

    response = client.post("/", {"app": str(app.pk), "question": TWO_FACTS})

    assert 'id="reasoning"' not in client.get(response["Location"]).content.decode()


def test_the_officers_evidence_page_and_report_show_the_same_chain(
    steps_library: steps_support.StepsLibrary,
) -> None:
    execution = query_execute(app=steps_library.app(), question=TWO_FACTS)
    client = _member(steps_library.organization, officer=True)

    for page in ("change", "report"):
        body = client.get(
            f"/admin/citations/queryexecution/{execution.pk}/{page}/"
        ).content.decode()
        assert 'id="steps-h"' in body and 'id="step-2"' in body, page
        assert "How often must passwords be changed?" in body
        assert 'href="#source-2"' in body and "Primary sources:" in body
    listed = client.get("/admin/citations/reasoningstep/")
    assert (
        listed.status_code == 200
        and "How often must passwords be changed?" in listed.content.decode()
    )
    step = execution.reasoning_steps.first()
    assert step is not None
    assert client.post(f"/admin/citations/reasoningstep/{step.pk}/delete/").status_code == 403


def _app_form(app: App, **changes: object) -> dict:
    return {
        "organization": str(app.organization_id),
        "name": app.name,
        "data_sources": [str(s.pk) for s in app.data_sources.all()],
        "top_k": 10,
        "candidate_k": 40,
        "min_score": 0,
        "answer_threshold": 0.35,
        "max_answer_sentences": 4,
        "generator": "extractive",
        "model": "",
        "prompt": "",
        "temperature": "",
        "max_output_tokens": 1024,
        "reasoning": "single",
        "model_contract": "auto",
        "model_fallback": "extractive",
        **changes,
    }


def test_the_admin_sets_reasoning_and_refuses_a_bad_value(
    steps_library: steps_support.StepsLibrary,
) -> None:
    app = steps_library.app(reasoning="single", name="editable")
    root = get_user_model().objects.create_superuser("root", password="pw-123-456")
    client = Client()
    client.force_login(root)
    url = f"/admin/citations/app/{app.pk}/change/"
    assert 'name="reasoning"' in client.get(url).content.decode()

    refused = client.post(url, _app_form(app, reasoning="chain-of-thought"))
    assert refused.status_code == 200 and "Select a valid choice" in refused.content.decode()
    assert App.objects.get(pk=app.pk).reasoning == "single"

    saved = client.post(url, _app_form(app, reasoning="steps"))
    assert saved.status_code == 302
    assert App.objects.get(pk=app.pk).reasoning == "steps"


def test_create_app_takes_reasoning_steps_and_refuses_a_bad_one(
    steps_library: steps_support.StepsLibrary,
) -> None:
    out = StringIO()
    call_command(
        "create_app",
        "Stepper",
        "--organization",
        "Initech",
        "--data-source",
        "Policies",
        "--reasoning",
        "steps",
        stdout=out,
    )
    app = App.objects.get(pk=out.getvalue().strip().splitlines()[-1])
    assert app.reasoning == "steps" and "in steps" in out.getvalue()

    with pytest.raises(CommandError, match="invalid choice: 'deep'"):
        call_command(
            "create_app",
            "Deep",
            "--organization",
            "Initech",
            "--data-source",
            "Policies",
            "--reasoning",
            "deep",
            stdout=StringIO(),
        )
    assert not App.objects.filter(name="Deep").exists()
    with pytest.raises(AppError, match="unknown reasoning 'deep'"):
        app_create(
            organization=steps_library.organization,
            name="Deep",
            data_source_names=["Policies"],
            reasoning="deep",
        )


def test_the_json_export_carries_the_steps_and_what_each_cites(
    steps_library: steps_support.StepsLibrary,
) -> None:
    execution = query_execute(app=steps_library.app(), question=TWO_FACTS)
    client = _member(steps_library.organization, officer=True)

    response = client.post(
        "/admin/citations/queryexecution/",
        {"action": "export_json", "_selected_action": [str(execution.pk)]},
    )

    (record,) = json.loads(streamed(response))
    steps = record["reasoning_steps"]
    assert [s["step_number"] for s in steps] == [1, 2]
    assert steps[1]["question"] == "How often must passwords be changed?"
    (source,) = steps[1]["source_attributions"]
    assert (source["quoted_as"], source["final_quoted_as"]) == ("1", "2")
    assert source["document_id"] == str(steps_library.security.document_id)
