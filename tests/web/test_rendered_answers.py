"""Answers read without Markdown syntax or backslash escapes on every surface that
shows one to a person (issue 55): the answer page, history, earlier turns of a
conversation, the source page, the officers' evidence page, report and lists,
``ask`` and the Markdown report; the REST API's ``answer`` stays the exact text.

The documents are the shared corpus's, ingested in-process by the real pipeline:
a Markdown file whose list item holds a link and whose table holds ">5000" (the
composition escapes both), and a PowerPoint whose slide links "Python library".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from citations.models import ClaimCitation, QueryExecution
from tests import factories
from tests.citations.test_officer_pages import officer_of
from tests.web.conftest import Tenant, ingest_now, signed_in

pytestmark = pytest.mark.django_db

TABLE = "hostile/pymupdf/test_markdown_bad_unicode.md"
SLIDES = "docling/pptx/powerpoint_comments.pptx"
LINK_QUESTION = "Which comment has a link to find out more?"
ROW_QUESTION = "What is the max boiling point of metals?"
LINK = '<a href="https://pymupdf.readthedocs.io" rel="noopener noreferrer nofollow">'
LINK_WORDS = "Comment 3 with a link to Find out more"
ROW_WORDS = "Metals · 357 · >5000 · 2755.9"
RAW = ("\\[", "\\>", "](", "**")  # what a reader must never see


@dataclass
class Answers:
    link: QueryExecution
    row: QueryExecution


def _ask(client: Client, tenant: Tenant, question: str) -> QueryExecution:
    response = client.post("/", {"app": str(tenant.app.pk), "question": question})
    assert response.status_code == 303, response.content
    return QueryExecution.objects.get(pk=response["Location"].split("/")[2])


@pytest.fixture
def answers(tenant: Tenant, corpus: Path) -> Answers:
    for relative in (TABLE, SLIDES):
        data = (corpus / relative).read_bytes()
        record = ingest_now(factories.upload(tenant.source, Path(relative).name, data).file)
        assert record.status == "ready", record.error_message
    link, row = (_ask(tenant.client, tenant, q) for q in (LINK_QUESTION, ROW_QUESTION))
    # the exact answers hold what readers must not see (else these tests prove nothing)
    assert "\\[Find out more\\](https://pymupdf.readthedocs.io)" in link.answer, link.answer
    assert "**Metals**|357|\\>5000|2755.9" in row.answer, row.answer
    return Answers(link=link, row=row)


def _clean(text: str) -> None:
    for raw in RAW:
        assert raw not in text, (raw, text)


def _answer_div(page: str) -> str:
    found = re.search(r'<div class="answer-text rendered" id="answer-text">(.*?)</div>', page, re.S)
    assert found, page
    return found.group(1)


def test_the_answer_page_renders_the_quoted_link_and_row(tenant: Tenant, answers: Answers) -> None:
    link = _answer_div(tenant.client.get(f"/answers/{answers.link.pk}/").content.decode())
    assert LINK in link and "Find out more</a>" in link
    assert re.search(r'<a class="ref" href="/answers/[^"]+/sources/1/#[^"]*"', link), link
    row = _answer_div(tenant.client.get(f"/answers/{answers.row.pk}/").content.decode())
    assert "<strong>Metals</strong>" in row and "&gt;5000" in row
    for html in (link, row):
        _clean(html)


def test_history_earlier_turns_and_the_source_page_read_as_text(
    tenant: Tenant, answers: Answers
) -> None:
    history = tenant.client.get("/history/").content.decode()
    assert LINK_WORDS in history and ROW_WORDS.replace(">", "&gt;") in history
    response = tenant.client.post(
        f"/answers/{answers.link.pk}/follow-up/", {"question": ROW_QUESTION}
    )
    assert response.status_code == 303
    later = tenant.client.get(response["Location"]).content.decode()
    earlier = later[later.index("Earlier in this conversation") : later.index("</section>")]
    assert LINK_WORDS in earlier
    source = tenant.client.get(f"/answers/{answers.link.pk}/sources/1/").content.decode()
    chain = source[source.index('id="chain-title"') :]
    chain = chain[: chain.index("</ol>")]
    assert LINK in chain
    for html in (history, earlier, chain):
        _clean(html)


def test_the_officers_pages_and_lists_read_as_text(tenant: Tenant, answers: Answers) -> None:
    officer = signed_in(officer_of(tenant.org))
    tenant.client.post(f"/answers/{answers.link.pk}/follow-up/", {"question": ROW_QUESTION})
    for execution in (answers.link, answers.row):
        evidence = officer.get(
            reverse("admin:citations_queryexecution_change", args=[execution.pk])
        ).content.decode()
        report = officer.get(
            reverse("admin:citations_queryexecution_report", args=[execution.pk])
        ).content.decode()
        for page in (evidence, report):
            shown = page[
                page.index('id="answer-h"') : page.index('id="model-h"')
                if 'id="model-h"' in page
                else None
            ]
            stored = re.sub(r"<details>.*?</details>", "", shown, flags=re.S)  # byte for byte
            _clean(stored)
    evidence = officer.get(
        reverse("admin:citations_queryexecution_change", args=[answers.link.pk])
    ).content.decode()
    assert evidence.count(LINK) >= 2  # the answer and the claim's two columns
    for model in ("queryexecution", "claimcitation", "message"):
        listing = officer.get(reverse(f"admin:citations_{model}_changelist")).content.decode()
        rows = listing[listing.index('id="result_list"') :]
        assert LINK_WORDS in rows, model
        _clean(rows)
    assert ClaimCitation.objects.filter(reply_sentence__contains="\\[").exists()  # as stored


def test_ask_prints_plain_text_and_the_markdown_report_links(
    tenant: Tenant, answers: Answers
) -> None:
    out = StringIO()
    call_command("ask", LINK_QUESTION, "--app", tenant.app.name, stdout=out)
    first = out.getvalue().splitlines()[0]
    assert first.startswith(f"{LINK_WORDS} (https://pymupdf.readthedocs.io) [1]"), first
    _clean(first)
    out = StringIO()
    call_command("ask", LINK_QUESTION, "--app", tenant.app.name, "--json", stdout=out)
    assert "\\\\[Find out more\\\\]" in out.getvalue()  # --json: the exact answer
    out = StringIO()
    call_command("ask", LINK_QUESTION, "--app", tenant.app.name, "--markdown", stdout=out)
    body = out.getvalue().split("\n\n")[0]
    assert "[Find out more](https://pymupdf.readthedocs.io)" in body and "\\[" not in body


def test_the_api_answer_stays_the_exact_text(tenant: Tenant, answers: Answers) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {factories.api_key(tenant.org)}")
    response = client.post(
        f"/semantics/apps/{tenant.app.pk}/query-executions",
        {"query": LINK_QUESTION},
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    execution = QueryExecution.objects.get(pk=body["query_id"])
    assert body["answer"].encode() == execution.answer.encode()
    assert body["answer"].encode() == answers.link.answer.encode()  # same question, same text
    assert "\\[Find out more\\](https://pymupdf.readthedocs.io) [1]" in body["answer"]
    for claim in execution.claim_citations.all():
        assert body["answer"][claim.reply_start : claim.reply_end] == claim.reply_sentence
