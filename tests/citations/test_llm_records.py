"""Model answers through the read side: get-quoted-sources, the v1 sentence
citations, the query detail's auditable block and evidence, the provenance-records
renderers and ``citations.md`` (every link followed), ``ask --markdown`` and the export."""

from __future__ import annotations

import hashlib
import io
import json
import re
from urllib.parse import urlsplit

import pytest
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from citations import exports
from citations.models import QueryExecution, RetrievalHit
from citations.records import (
    ClaimCitation,
    build_citation_record,
    format_citations_markdown,
    format_claim_citations_markdown,
)
from citations.services import query_execute
from tests import factories
from tests.citations import llm_support
from tests.citations.llm_support import CAMERAS, CONTRACTS
from tests.support import model_servers as ms
from tests.support.http import streamed

# the shared fixtures of tests/citations/llm_support.py, used in this module
llm_library, fast_retries = llm_support.llm_library, llm_support.fast_retries
openai_server, anthropic_server = llm_support.openai_server, llm_support.anthropic_server

QUESTION = "How long are camera recordings and customer contracts kept?"
LINK = re.compile(r"\]\((https?://[^)\s]+)\)")


def _client(key: str | None) -> APIClient:
    client = APIClient()
    if key:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


@pytest.fixture(params=["openai", "anthropic"])
def answered(
    request: pytest.FixtureRequest,
    llm_library: llm_support.Library,
    openai_server: ms.Server,
    anthropic_server: ms.Server,
) -> QueryExecution:
    """An answer of each model generator citing two claims."""
    if request.param == "openai":
        openai_server.script(ms.answering(CAMERAS, CONTRACTS))
    else:
        anthropic_server.script(ms.claude(CAMERAS, CONTRACTS))
    app = llm_library.app(request.param)
    return query_execute(app=app, question=QUESTION, origin="api")


def test_quoted_sources_are_exactly_the_cited_chunks_in_order(
    llm_library: llm_support.Library, answered: QueryExecution
) -> None:
    base = f"/semantics/apps/{answered.app_id}"
    sources = (
        _client(llm_library.key)
        .get(f"{base}/query-execution-sources/{answered.pk}/get-quoted-sources")
        .json()
    )
    claims = list(answered.claim_citations.select_related("quoted_source").order_by("segment"))
    cited = list(dict.fromkeys(str(c.quoted_source.chunk_id) for c in claims))
    assert [s["chunk"]["id"] for s in sorted(sources, key=lambda s: int(s["quoted_as"]))] == cited
    assert [s["quoted_as"] for s in sources] == [str(n) for n in range(1, len(cited) + 1)]

    v1 = _client(llm_library.key).post(f"{base}/query-executions/{answered.pk}/citations").json()
    assert [c["reply_sentence"] for c in v1] == [CAMERAS[0], CONTRACTS[0]]
    chunks = {s["chunk"]["id"]: s["chunk"]["data"] for s in sources}
    for item in v1:
        reply = answered.answer[item["start_char_idx"] : item["end_char_idx"]]
        assert reply == item["reply_sentence"]
        data = chunks[item["chunk_id"]]
        start, end = item["source_start_char_idx"], item["source_end_char_idx"]
        assert data[start:end] == item["source_sentence"]


def test_the_detail_adds_the_auditable_block_and_the_model_evidence(
    llm_library: llm_support.Library, answered: QueryExecution
) -> None:
    detail = (
        _client(llm_library.key)
        .get(f"/semantics/apps/{answered.app_id}/query-executions/{answered.pk}")
        .json()
    )
    block = detail["auditable"]
    assert list(block) == ["citations", "answer", "ΔS", "λ"]
    assert block["answer"] == answered.answer and block["λ"] == "convergent"
    hits = {str(h.chunk_id): h.payload for h in answered.hits.all()}
    for citation in block["citations"]:
        assert citation == {k: hits[citation["snippet_id"]][k] for k in citation}
    assert detail["written_by"].startswith(answered.app.generator + ":")
    [call] = detail["model_calls"]
    assert call["prompt_sha256"] and call["response_sha256"] and call["input_tokens"]
    assert [c["quoted_as"] for c in detail["claim_checks"]] == [
        c.quoted_source.quoted_as for c in answered.claim_citations.order_by("segment")
    ]


def test_citations_markdown_links_resolve_to_what_they_name(
    llm_library: llm_support.Library, answered: QueryExecution
) -> None:
    client = _client(llm_library.key)
    url = f"/semantics/apps/{answered.app_id}/query-executions/{answered.pk}/citations.md"
    response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/markdown")
    text = response.content.decode()
    assert text.startswith(answered.answer[: answered.answer.index(CAMERAS[0]) + len(CAMERAS[0])])
    assert "[^1]" in text and "[^2]" in text and "## Sources" in text
    links = LINK.findall(text)
    assert len(links) >= 2 + 2 * answered.hits.count()
    for link in links:
        assert link.startswith("http://testserver/")
        followed = client.get(urlsplit(link).path)
        assert followed.status_code == 200, link
        if "/chunk/" in link:
            assert followed.json()["chunk_id"] == link.rsplit("/", 1)[1]
        else:
            file_id = link.split("/files/")[1].split("/")[0]
            hit = RetrievalHit.objects.filter(query=answered, file_id=file_id).first()
            assert hit is not None
            content = streamed(followed) if followed.streaming else followed.content
            assert hashlib.sha256(content).hexdigest() == hit.file.sha256

    based = client.get(url, {"base_url": "https://provenance.example"}).content.decode()
    assert all(link.startswith("https://provenance.example/") for link in LINK.findall(based))


def test_citations_markdown_refuses_what_it_must(
    llm_library: llm_support.Library, answered: QueryExecution
) -> None:
    url = f"/semantics/apps/{answered.app_id}/query-executions/{answered.pk}/citations.md"
    assert _client(llm_library.key).get(url, {"base_url": "javascript:alert(1)"}).status_code == 400
    assert _client(None).get(url).status_code == 401
    other = factories.api_key(factories.organization("Globex"))
    response = _client(other).get(url)
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    missing = url.replace(str(answered.pk), "00000000-0000-0000-0000-000000000000")
    assert _client(llm_library.key).get(missing).status_code == 404


def test_the_renderers_as_the_provenance_records_document_describes(
    llm_library: llm_support.Library,
) -> None:
    org = llm_library.organization
    hits = list(RetrievalHit.objects.none())
    record = build_citation_record(
        "q", hits, retriever_name="hybrid-rrf", retrieved_at=timezone.now(), excerpt_chars=10
    )
    assert record.hits == () and "## Sources" in format_citations_markdown(record)
    text = "Cameras keep thirty days. [1] Contracts ten years. [2]"
    claims = [
        ClaimCitation((0, 25), 0, "policy.md › Cameras", "thirty [days]", url="/v1/x"),
        ClaimCitation((30, 50), 1, "policy.md › Contracts", "ten years", cited_block_index=3),
    ]
    rendered = format_claim_citations_markdown(text, claims, base_url="https://h.example/")
    assert rendered.startswith("Cameras keep thirty days.[^1] [1] Contracts ten years.[^2] [2]")
    assert '[^1]: [policy.md › Cameras](https://h.example/v1/x) — "thirty \\[days\\]"' in rendered
    assert '[^2]: policy.md › Contracts — "ten years"' in rendered
    assert org is not None


def test_excerpts_are_cut_to_excerpt_chars(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    openai_server.script(ms.answering(CAMERAS))
    execution = query_execute(app=llm_library.app("openai"), question=QUESTION)
    hits = list(execution.hits.select_related("chunk", "file__data_source").order_by("k_pos"))
    record = build_citation_record(
        execution.question,
        hits,
        retriever_name=execution.retriever,
        retrieved_at=execution.created_at,
        excerpt_chars=12,
    )
    assert [h.template_path for h in record.hits] == [h.file.name for h in hits]
    assert all(
        h.excerpt is not None and len(h.excerpt) <= 13 and h.category == "Policies"
        for h in record.hits
    )


def test_ask_markdown_and_the_export_carry_the_model_evidence(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    openai_server.script(ms.answering(CAMERAS))
    app = llm_library.app("openai")
    out = io.StringIO()
    call_command("ask", QUESTION, "--app", app.name, "--markdown", stdout=out)
    text = out.getvalue()
    assert text.startswith(f"{CAMERAS[0]}[^1] [1]") and "## Sources" in text
    execution = QueryExecution.objects.get(app=app)
    [record] = json.loads("".join(exports.json_chunks(QueryExecution.objects.filter(app=app))))
    [call] = record["model_calls"]
    assert call["raw_response"] and call["prompt"]["model"] == "test-model"
    assert record["claim_checks"][0]["reason"] == "supported"
    assert execution.answer == f"{CAMERAS[0]} [1]"
