"""The whole chain of custody driven by the official ``openai`` package against a
live server and a real worker: thread → message → run (``create_and_poll``) →
messages with annotations and source-tracing fields → chunk provenance → the
original file's bytes, page and lines."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import openai
import pymupdf
import pytest
from pytest_django.live_server_helper import LiveServer

from citations.models import QueryExecution, QuotedSource, Run
from documents.models import File
from tests import factories
from tests.support.assistants import file_citations, metadata_of, quote_of, text_of
from tests.support.worker import WorkerProcess
from tests.threads.conftest import Http, demo_handbook, security_policy_pdf, tenant_with

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.worker,
    pytest.mark.filterwarnings("ignore:The Assistants API is deprecated:DeprecationWarning"),
]


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_it_traces_an_answer_from_the_run_down_to_the_original_bytes(
    celery_worker: WorkerProcess, live_server: LiveServer, tmp_path: Path
) -> None:
    tenant = tenant_with(
        "Acme",
        {
            "security-policy.pdf": security_policy_pdf(tmp_path),
            "employee-handbook.md": demo_handbook(tmp_path / "md"),
        },
    )
    client = openai.OpenAI(api_key=tenant.key, base_url=f"{live_server.url}/v1", max_retries=0)
    http = Http(live_server.url, tenant.key)

    thread = client.beta.threads.create(metadata={"case": "incident"})
    client.beta.threads.messages.create(
        thread_id=thread.id, role="user", content="How quickly must security incidents be reported?"
    )
    run = client.beta.threads.runs.create_and_poll(
        thread_id=thread.id, assistant_id=str(tenant.app.pk), timeout=60
    )
    assert run.status == "completed", run.last_error
    assert run.object == "thread.run" and run.thread_id == thread.id
    assert run.assistant_id == str(tenant.app.pk)

    messages = client.beta.threads.messages.list(thread_id=thread.id, order="asc")
    assert [m.role for m in messages.data] == ["user", "assistant"]
    answer_message = messages.data[-1]
    assert answer_message.run_id == run.id
    assert answer_message.assistant_id == str(tenant.app.pk)
    answer = text_of(answer_message)
    assert "within one hour of discovery" in answer.value
    assert answer.annotations, "the answer cites nothing"

    tracing = json.loads(text_of(answer_message, 1).value)
    assert tracing["object"] == "source_tracing"
    assert tracing["query_id"] == metadata_of(answer_message)["query_id"]
    chunks = tracing["chunks"]
    assert chunks and all(
        {"chunk_id", "page", "lines", "section", "database_id", "file_id"} <= set(c) for c in chunks
    )
    by_number = {c["quoted_as"]: c for c in chunks if c["quoted_as"]}

    pdf = tenant.files["security-policy.pdf"]
    cited_pdf = False
    for annotation in file_citations(answer.annotations):
        assert annotation.type == "file_citation"
        assert answer.value[annotation.start_index : annotation.end_index] == annotation.text
        number = annotation.text.strip("[]")
        traced = by_number[number]
        assert annotation.file_citation.file_id == traced["file_id"]
        quote = quote_of(annotation)  # an extension field the client keeps

        # chunk_id + database_id → provenance (file_id, Markdown location)
        chunk = http.get(
            f"/v1/flow/vectordb/{traced['database_id']}/chunk/{traced['chunk_id']}"
        ).json()
        assert chunk["file_id"] == traced["file_id"]
        assert quote in chunk["chunk_text"]
        first, last = chunk["locations"][0], chunk["locations"][-1]
        assert (first["line_number_start"], last["line_number_end"]) == (
            traced["lines"]["start"],
            traced["lines"]["end"],
        )
        assert first["page_number"] == traced["page"]
        assert " > ".join(first["hierarchy"]) == traced["section"]

        # the exact lines of the ingested Markdown hold the chunk and the quote
        markdown = http.get(f"/v1/flow/files/{chunk['file_id']}/markdown").json()["markdown"]
        lines = markdown.splitlines()[traced["lines"]["start"] - 1 : traced["lines"]["end"]]
        assert chunk["chunk_text"].strip() in "\n".join(lines)

        # file_id → the original bytes, unchanged
        content = http.get(f"/v1/flow/files/{chunk['file_id']}/content")
        assert content.status == 200
        sha256 = hashlib.sha256(content.body).hexdigest()
        assert sha256 == content.headers["X-Content-SHA256"]
        assert sha256 == File.objects.get(pk=chunk["file_id"]).sha256

        if chunk["file_id"] == str(pdf.pk):
            cited_pdf = True
            assert traced["page"] == 3
            with pymupdf.open(stream=content.body, filetype="pdf") as document:
                page_text = document[traced["page"] - 1].get_text()
            assert _flat(quote) in _flat(page_text)
    assert cited_pdf, "the incident rule on page 3 of the PDF was not cited"

    # the run is an ordinary query execution: same audit records, visible to compliance
    record = Run.objects.get(pk=run.id)
    execution = QueryExecution.objects.get(pk=metadata_of(answer_message)["query_id"])
    assert record.query_id == execution.pk and execution.origin == "thread"
    assert execution.answer == answer.value and execution.caller.startswith("api-key:")
    numbers = sorted({a.text.strip("[]") for a in answer.annotations}, key=int)
    assert numbers == list(
        QuotedSource.objects.filter(query=execution).values_list("quoted_as", flat=True)
    )
    quoted = http.get(
        f"/semantics/apps/{tenant.app.pk}/query-execution-sources/{execution.pk}/get-quoted-sources"
    ).json()
    assert [q["quoted_as"] for q in quoted] == numbers

    # typed errors the client raises
    with pytest.raises(openai.BadRequestError) as finished:
        client.beta.threads.runs.cancel(thread_id=thread.id, run_id=run.id)
    assert finished.value.code == "run_not_cancellable"
    stranger = factories.organization("Globex")
    other = openai.OpenAI(
        api_key=factories.api_key(stranger), base_url=f"{live_server.url}/v1", max_retries=0
    )
    with pytest.raises(openai.NotFoundError):
        other.beta.threads.retrieve(thread.id)
    with pytest.raises(openai.NotFoundError):
        other.beta.threads.messages.list(thread_id=thread.id)
    with pytest.raises(openai.NotFoundError):
        other.beta.threads.runs.create(thread_id=thread.id, assistant_id=str(tenant.app.pk))
