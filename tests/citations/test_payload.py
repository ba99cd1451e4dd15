"""The citation payload's seed details on a real index (issue 55): ``window`` (what a
snippet shares with its neighbours), an absolute ``source_url`` (the request's origin,
else the configured public URL) and analyzer parity, which fails an answer fast when
the index was built with another analyzer than the read path's."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client, override_settings
from rest_framework.test import APIClient

from citations.llm_apps import app_create
from citations.models import App, QueryExecution, QueryStatus, RetrievalHit
from citations.services import query_execute
from citations.services.searching import IndexMismatch, searcher_for
from citations.threads import services as thread_services
from core.api_keys import api_key_verify
from documents.fulltext import ANALYZER
from documents.models import Chunk, DataSource, Organization
from retrieval.embedders import EMBED_DIMENSIONS, configured_model_id
from retrieval.models import VectorDatabase
from tests import factories
from tests.citations.llm_support import ingest

pytestmark = pytest.mark.django_db

# one long section of prose (no headings): its chunks overlap their neighbours
PAPER = "markitdown/test_files/expected_outputs/test.md"
QUESTION = "How can LLM agents cooperate through conversations?"
# the analyzer an index written before the script-boundary rule records
OLDER_ANALYZER = "english"


@dataclass
class Papers:
    organization: Organization
    key: str
    source: DataSource

    def app(self, name: str = "Papers") -> App:
        return app_create(
            organization=self.organization, name=name, data_source_names=[self.source.name]
        )


def _papers(corpus: Path | None, *, analyzer: str = ANALYZER, embed_model: str = "") -> Papers:
    """An index of its own, recorded with ``analyzer`` and ``embed_model``, holding the
    paper (none without ``corpus``: the parity checks come before any search, and each
    test's rolled-back chunks stay in the HNSW graph until a vacuum, so the tests that
    need no document ingest none)."""
    org = factories.organization("Acme")
    database = VectorDatabase.objects.create(
        organization=org,
        name=f"papers ({analyzer})",
        embed_model=embed_model or configured_model_id(),
        embed_dimensions=EMBED_DIMENSIONS,
        analyzer=analyzer,
    )
    source = DataSource.objects.create(organization=org, name="Papers", vector_database=database)
    if corpus is not None:
        ingest(source, "autogen.md", (corpus / PAPER).read_text())
    return Papers(org, factories.api_key(org), source)


@pytest.fixture
def papers(corpus: Path) -> Papers:
    return _papers(corpus)


@pytest.fixture
def no_papers() -> Papers:
    return _papers(None)


def _client(key: str, host: str = "testserver") -> APIClient:
    client = APIClient(HTTP_HOST=host)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def _ask(client: APIClient, app: App, question: str = QUESTION) -> dict:
    response = client.post(
        f"/semantics/apps/{app.pk}/query-executions", {"query": question}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()


def _neighbour(chunk: Chunk, step: int) -> Chunk | None:
    return Chunk.objects.filter(
        markdown_id=chunk.markdown_id, position=chunk.position + step
    ).first()


# --- window ------------------------------------------------------------------------


def test_each_hit_s_window_is_what_its_snippet_shares_with_its_neighbours(papers: Papers) -> None:
    app = papers.app()
    searcher = searcher_for(app)
    retrieved, _ = searcher.search(QUESTION)
    issued = [p.payload["window"] for p in searcher.passages(retrieved) if p.payload]
    execution = query_execute(app=app, question=QUESTION)
    hits = list(RetrievalHit.objects.filter(query=execution).select_related("chunk"))
    assert len(hits) >= 3
    # the generator is given the window the answer records
    # (in retrieval order: k_final is the answer scorer's order of the same hits)
    assert issued == [h.payload["window"] for h in sorted(hits, key=lambda h: h.k_pos)]
    shared = 0
    for hit in hits:
        chunk, window = hit.chunk, hit.payload["window"]
        assert set(window) == {"pre", "post"}
        before, after = _neighbour(chunk, -1), _neighbour(chunk, +1)
        pre = max(0, before.char_end - chunk.char_start) if before else 0
        post = max(0, chunk.char_end - after.char_start) if after else 0
        assert window == {"pre": pre, "post": post}, chunk.position
        if before and pre:  # the snippet opens with the previous chunk's last characters
            assert chunk.chunk_text[:pre] == before.chunk_text[-pre:]
        if after and post:
            assert chunk.chunk_text[-post:] == after.chunk_text[:post]
        shared += bool(pre or post)
    assert shared, "the paper's chunks overlap: some hit shares context with a neighbour"


# --- source_url ----------------------------------------------------------------------


def _chunk_path(hit: RetrievalHit) -> str:
    return f"/v1/flow/vectordb/{hit.chunk.vector_database_id}/chunk/{hit.chunk_id}"


def _payload_urls(**filters: object) -> set[str]:
    return {h.payload["source_url"] for h in RetrievalHit.objects.filter(**filters)}


def test_source_url_is_absolute_on_the_host_the_question_was_asked_at(papers: Papers) -> None:
    app = papers.app()
    client = _client(papers.key, host="localhost:8123")
    asked = _ask(client, app)
    hits = RetrievalHit.objects.filter(query_id=asked["query_id"]).select_related("chunk")
    assert hits
    for hit in hits:
        assert hit.payload["source_url"] == f"http://localhost:8123{_chunk_path(hit)}"
    detail = client.get(f"/semantics/apps/{app.pk}/query-executions/{asked['query_id']}").json()
    urls = [h["citation"]["source_url"] for h in detail["hits"]]
    urls += [c["source_url"] for c in detail["auditable"]["citations"]]
    assert all(u.startswith("http://localhost:8123/v1/flow/vectordb/") for u in urls), urls
    # the window is returned with the payload as stored
    returned = {h["citation"]["snippet_id"]: h["citation"]["window"] for h in detail["hits"]}
    assert returned == {str(h.chunk_id): h.payload["window"] for h in hits}
    # the link leads to the chunk it names
    first = detail["hits"][0]["citation"]
    chunk = client.get(urlsplit(first["source_url"]).path)
    assert chunk.status_code == 200 and chunk.json()["chunk_id"] == first["snippet_id"]
    # the Responses API too
    answered = _respond(papers, app, host="localhost:8123")
    assert answered["status"] == "completed", answered["error"]
    responded = _payload_urls(query__app=app, query__origin="response")
    assert responded and all(
        u.startswith("http://localhost:8123/v1/flow/vectordb/") for u in responded
    )


@override_settings(PROVENANCE_PUBLIC_URL="https://docs.example.com")
def test_without_a_request_source_url_is_on_the_public_url_or_ask_s_base_url(
    papers: Papers,
) -> None:
    app = papers.app()
    execution = query_execute(app=app, question=QUESTION, origin="evaluation")
    hits = list(RetrievalHit.objects.filter(query=execution).select_related("chunk"))
    assert hits and {h.payload["source_url"] for h in hits} == {
        f"https://docs.example.com{_chunk_path(h)}" for h in hits
    }
    run = _thread_run(papers, app)  # answered as the worker answers it
    assert run["status"] == "completed", run["last_error"]
    ran = _payload_urls(query_id=run["query_id"])
    assert ran and all(u.startswith("https://docs.example.com/v1/flow/vectordb/") for u in ran)
    ask = ("ask", QUESTION, "--app", str(app.pk), "--json")
    call_command(*ask, "--base-url", "https://audit.example.org/")
    asked = _payload_urls(query__app=app, query__origin="cli")
    assert asked and all(u.startswith("https://audit.example.org/v1/flow/vectordb/") for u in asked)


@pytest.mark.parametrize("base_url", ["ftp://audit.example.org", "javascript:alert(1)", "x" * 600])
def test_the_ask_command_refuses_a_base_url_that_is_no_http_url(
    no_papers: Papers, base_url: str
) -> None:
    app = no_papers.app()
    with pytest.raises(CommandError, match="http"):
        call_command("ask", QUESTION, "--app", str(app.pk), "--base-url", base_url)
    assert not QueryExecution.objects.filter(app=app).exists()


def test_a_host_the_site_does_not_serve_gets_400_and_no_answer(no_papers: Papers) -> None:
    app = no_papers.app()
    response = _client(no_papers.key, host="evil.example").post(
        f"/semantics/apps/{app.pk}/query-executions", {"query": QUESTION}, format="json"
    )
    assert response.status_code == 400
    assert not QueryExecution.objects.filter(app=app).exists()


@pytest.mark.parametrize(
    "value",
    [
        "docs.example.com",
        "ftp://docs.example.com",
        "https://",
        "https://docs.example.com/provenance",
        "https://docs.example.com?x=1",
        "https://user:secret@docs.example.com",
        "https://docs.example.com:notaport",
        "https://" + "a" * 400 + ".com",
    ],
)
def test_a_public_url_that_is_no_http_origin_stops_start_up(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    from django.core.exceptions import ImproperlyConfigured

    from provenance_site.env import env_origin

    monkeypatch.setenv("PROVENANCE_PUBLIC_URL", value)
    with pytest.raises(ImproperlyConfigured, match="PROVENANCE_PUBLIC_URL"):
        env_origin("PROVENANCE_PUBLIC_URL", "http://127.0.0.1:8000")
    monkeypatch.setenv("PROVENANCE_PUBLIC_URL", "https://docs.example.com:8443/")
    assert env_origin("PROVENANCE_PUBLIC_URL", "") == "https://docs.example.com:8443"


# --- analyzer parity ----------------------------------------------------------------


def test_an_index_built_with_another_analyzer_fails_every_answer_fast(corpus: Path) -> None:
    papers = _papers(corpus, analyzer=OLDER_ANALYZER)
    app = papers.app()
    # REST: 409 with the code and a message naming both analyzers
    response = _client(papers.key).post(
        f"/semantics/apps/{app.pk}/query-executions", {"query": QUESTION}, format="json"
    )
    assert response.status_code == 409, response.content
    error = response.json()["error"]
    assert error["code"] == "analyzer_mismatch" and error["type"] == "conflict_error"
    assert repr(OLDER_ANALYZER) in error["message"] and repr(ANALYZER) in error["message"]
    execution = QueryExecution.objects.get(app=app)
    assert execution.status == QueryStatus.FAILED and "analyzer" in execution.error_message
    assert not RetrievalHit.objects.filter(query__app=app).exists()  # nothing was searched
    # a thread run and a response end failed with the reason; ask says it
    run = _thread_run(papers, app)
    assert run["status"] == "failed" and run["last_error"]["code"] == "server_error"
    assert run["last_error"]["message"].startswith("analyzer_mismatch: the index")
    answered = _respond(papers, app)
    assert answered["status"] == "failed" and answered["error"]["code"] == "server_error"
    assert answered["error"]["message"].startswith("analyzer_mismatch: the index")
    with pytest.raises(CommandError, match="analyzer"):
        call_command("ask", QUESTION, "--app", str(app.pk))
    # the reader's page says so too (a 400 page naming the cause, not a 500)
    reader = get_user_model().objects.create_user("reader", password="pw-for-the-test")
    papers.organization.members.create(user=reader, role="editor")
    browser = Client()
    browser.force_login(reader)
    page = browser.post("/", {"app": str(app.pk), "question": QUESTION})
    assert page.status_code == 400
    assert "cannot be searched as they are" in page.content.decode()
    assert "analyzer" in page.content.decode()
    statuses = set(QueryExecution.objects.filter(app=app).values_list("status", flat=True))
    assert statuses == {QueryStatus.FAILED}


def test_a_read_path_with_another_analyzer_than_the_index_s_fails_fast(no_papers: Papers) -> None:
    app = no_papers.app()
    with pytest.raises(IndexMismatch) as raised:
        searcher_for(app, read_analyzer="simple+spaced-scripts")
    assert raised.value.code == "analyzer_mismatch" and raised.value.status == 409
    assert searcher_for(app).analyzer == ANALYZER  # the index's own read path answers


def test_an_index_of_another_embed_model_is_a_409_not_a_500() -> None:
    papers = _papers(None, embed_model="BAAI/bge-small-en-v1.5")
    response = _client(papers.key).post(
        f"/semantics/apps/{papers.app().pk}/query-executions", {"query": QUESTION}, format="json"
    )
    assert response.status_code == 409, response.content
    assert response.json()["error"]["code"] == "embed_model_mismatch"


def _thread_run(papers: Papers, app: App) -> dict:
    """A thread run answered as the worker answers it (no request), read over REST."""
    owner = api_key_verify(presented=papers.key)
    thread = thread_services.thread_create(organization=papers.organization, api_key=owner)
    thread_services.message_create(thread=thread, role="user", content=QUESTION)
    run = thread_services.run_create(thread=thread, app=app)
    thread_services.run_execute(run_id=str(run.pk))
    return _client(papers.key).get(f"/v1/threads/{thread.pk}/runs/{run.pk}").json()


def _respond(papers: Papers, app: App, host: str = "testserver") -> dict:
    response = _client(papers.key, host=host).post(
        "/v1/responses", {"model": str(app.pk), "input": QUESTION}, format="json"
    )
    assert response.status_code == 200, response.content
    return response.json()
