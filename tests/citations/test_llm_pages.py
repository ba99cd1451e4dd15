"""Model answers on the pages people read: the end user's answer page and the
officer's admin show the answer with its [n], name the model that wrote it, mark
the sentences left out as unsupported, and a failed model call says why."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.test import Client

from citations.models import App, QueryExecution
from citations.services import query_execute
from documents.models import Organization, OrganizationMember
from tests.citations import llm_support
from tests.citations.llm_support import CAMERAS
from tests.support import model_servers as ms

# the shared fixtures of tests/citations/llm_support.py, used in this module
llm_library, fast_retries = llm_support.llm_library, llm_support.fast_retries
openai_server, anthropic_server = llm_support.openai_server, llm_support.anthropic_server

INVENTED = "Visitors may watch the recordings on request."


def _member(org: Organization, *, officer: bool = False) -> Client:
    user = get_user_model().objects.create_user("olivia", password="pw-123-456", is_staff=officer)
    role = "officer" if officer else "viewer"
    OrganizationMember.objects.create(organization=org, user=user, role=role)
    client = Client()
    client.force_login(user)
    return client


def _half_supported(request: dict[str, Any]) -> ms.Reply:
    snippets = ms.snippets_of(request)
    cited = ms.citation_for(snippets, CAMERAS[1])
    invented = {**cited, "quote": "Visitors may watch the recordings"}
    return ms.chat_completion(
        request, ms.contract([cited, invented], [(CAMERAS[0], [0]), (INVENTED, [1])])
    )


def test_the_answer_page_names_the_model_and_marks_unsupported_sentences(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    openai_server.script(_half_supported)
    app = llm_library.app("openai", model="gpt-test")
    client = _member(llm_library.organization)
    response = client.post("/", {"app": str(app.pk), "question": "How long are recordings kept?"})
    assert response.status_code == 303
    body = client.get(response["Location"]).content.decode()
    assert f'{CAMERAS[0]} <a class="ref"' in body
    assert 'id="written-by"' in body and "openai:gpt-test-2026-01-01" in body
    unsupported = body.split('id="unsupported"')[1].split("</div>")[0]
    assert f"<del>{INVENTED}</del>" in unsupported and "quote_not_found" in unsupported
    assert CAMERAS[0] not in unsupported


def test_a_model_failure_is_said_on_the_ask_page(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    openai_server.script(
        lambda r: ms.openai_error(401, "Incorrect API key", "invalid_request_error")
    )
    app = llm_library.app("openai")
    client = _member(llm_library.organization)
    response = client.post("/", {"app": str(app.pk), "question": "How long are recordings kept?"})
    assert response.status_code == 400
    assert "The model could not answer" in response.content.decode()
    assert "OPENAI_API_KEY" in response.content.decode()
    assert QueryExecution.objects.get().status == "failed"


def test_the_officer_s_page_shows_the_model_evidence(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    openai_server.script(_half_supported)
    execution = query_execute(
        app=llm_library.app("openai"), question="How long are recordings kept?"
    )
    client = _member(llm_library.organization, officer=True)
    body = client.get(f"/admin/citations/queryexecution/{execution.pk}/change/").content.decode()
    assert 'id="written-by">openai:test-model-2026-01-01' in body
    for call in execution.model_calls.all():  # the reply and the one retry asking to fix it
        assert call.prompt_sha256 in body and call.response_sha256 in body
        assert call.response_id in body
    assert f"<del>{INVENTED}</del>" in body and "UNSUPPORTED: quote_not_found" in body
    report = client.get(f"/admin/citations/queryexecution/{execution.pk}/report/").content.decode()
    assert "UNSUPPORTED: quote_not_found" in report


def test_the_admin_edits_an_app_s_generator_and_refuses_one_without_a_model(
    llm_library: llm_support.Library,
) -> None:
    app = llm_library.app("openai")
    user = get_user_model().objects.create_superuser("root", password="pw-123-456")
    client = Client()
    client.force_login(user)
    form = client.get(f"/admin/citations/app/{app.pk}/change/").content.decode()
    fields = ("generator", "model", "prompt", "temperature", "max_output_tokens")
    for field in (*fields, "model_contract", "model_fallback", "model_timeout_seconds"):
        assert f'name="{field}"' in form
    data = {
        "organization": str(app.organization_id),
        "name": app.name,
        "data_sources": [str(s.pk) for s in app.data_sources.all()],
        "top_k": 10,
        "candidate_k": 40,
        "min_score": 0,
        "answer_threshold": 0.35,
        "max_answer_sentences": 4,
        "generator": "anthropic",
        "model": "",
        "prompt": "Be brief.",
        "temperature": "0.3",
        "max_output_tokens": 512,
        "reasoning": "single",
        "model_contract": "flat",
        "model_fallback": "extractive",
        "model_timeout_seconds": "900",
    }
    refused = client.post(f"/admin/citations/app/{app.pk}/change/", data)
    assert refused.status_code == 200 and "needs a model" in refused.content.decode()
    saved = client.post(f"/admin/citations/app/{app.pk}/change/", {**data, "model": "claude-x"})
    assert saved.status_code == 302, saved.content.decode()[:3000]
    app = App.objects.get(pk=app.pk)
    assert (app.generator, app.model, app.temperature, app.max_output_tokens) == (
        "anthropic",
        "claude-x",
        0.3,
        512,
    )
    assert (app.model_contract, app.model_fallback, app.model_timeout_seconds) == (
        "flat",
        "extractive",
        900,
    )
