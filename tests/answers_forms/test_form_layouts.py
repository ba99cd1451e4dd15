"""Forms and registers in the six common layouts, of a seed the answer scorer never
saw (neither trained nor reported on), ingested through the real worker and asked
over REST as an integrator does: each layout's answers quote the right value from
the right record (and page, for a PDF); a field no record has is answered by
nothing cited.

The documents come from ``evaluation.forms`` (labels, field order, fonts, notes and
letterheads vary with the seed); ``evaluation/reports/answer_scorer.md`` has the
figures of the scorer's own test split.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from django.core.management import call_command
from pytest_django import DjangoDbBlocker
from rest_framework.test import APIClient

from citations.llm_apps import app_create
from citations.models import App, ClaimCitation
from evaluation.forms import LAYOUTS, FormDocument, form_document
from evaluation.scorer_training import TEST_SEEDS, TRAIN_SEEDS
from tests import factories
from tests.conftest import wait_for_status
from tests.support.claims import claim_page
from tests.support.worker import WorkerProcess

pytestmark = pytest.mark.django_db

SEED = 900
# measured on this seed at the commit that fitted the scorer (docs/generators.md):
# the target is 0.95 in each layout, which the held-out report shows is not
# reached in every layout yet; the floor keeps what is reached from sliding back
RIGHT_FLOOR = 0.85
NOTHING_CITED_FLOOR = 0.45  # measured 0.50 on this seed (the target: 0.90)


@dataclass(frozen=True)
class Shelf:
    key: str
    apps: dict[str, tuple[App, FormDocument]]


@pytest.fixture(scope="module")
def shelf(
    django_db_setup: None, django_db_blocker: DjangoDbBlocker, celery_worker: WorkerProcess
) -> Iterator[Shelf]:
    assert SEED not in TRAIN_SEEDS and SEED not in TEST_SEEDS
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)
        org = factories.organization("Forms")
        apps = {}
        uploads = []
        for layout in LAYOUTS:
            document = form_document(layout, SEED)
            source = factories.data_source(org, layout)
            uploads.append(factories.upload(source, document.name, document.data).file)
            app = app_create(organization=org, name=layout, data_source_names=[layout])
            apps[layout] = (app, document)
        for record in uploads:
            assert wait_for_status(record.pk, timeout=300).status == "ready", record.name
        yield Shelf(factories.api_key(org), apps)
        call_command("flush", interactive=False, verbosity=0)


def _ask(shelf: Shelf, app: App, question: str) -> tuple[str, list[ClaimCitation]]:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {shelf.key}")
    response = client.post(
        f"/semantics/apps/{app.pk}/query-executions", {"query": question}, format="json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    claims = list(
        ClaimCitation.objects.filter(query_id=body["query_id"])
        .select_related("quoted_source__chunk")
        .prefetch_related("quoted_source__chunk__locations")
        .order_by("segment")
    )
    return body["answer"], claims


def test_each_layout_answers_from_the_right_record_and_page(shelf: Shelf) -> None:
    assert set(shelf.apps) == set(LAYOUTS)
    shares, misses = {}, []
    for layout, (app, document) in shelf.apps.items():
        asked = [q for q in document.questions if q.answer]
        assert asked, layout
        right = 0
        for question in asked:
            answer, claims = _ask(shelf, app, question.question)
            first = claims[0] if claims else None
            values = (question.answer or "", *question.also)  # of two records, either's
            holds = first is not None and any(v in first.source_sentence for v in values)
            on_page = question.page is None or (
                first is not None and claim_page(first) == question.page
            )
            right += holds and on_page
            if not (holds and on_page):
                misses.append(f"{layout}: {question.question} -> {answer}")
        shares[layout] = right / len(asked)
    print("\nright value from the right record (and page):", shares)
    assert all(share >= RIGHT_FLOOR for share in shares.values()), (shares, misses)


def test_a_field_no_record_has_is_answered_by_nothing_cited(shelf: Shelf) -> None:
    asked = [
        (app, q)
        for app, document in shelf.apps.values()
        for q in document.questions
        if not q.answer
    ]
    assert asked
    cited = [
        (q.question, answer) for app, q in asked if (answer := _ask(shelf, app, q.question)[1])
    ]
    share = 1 - len(cited) / len(asked)
    print(f"\nnothing cited for {share:.3f} of {len(asked)} unanswerable questions")
    assert share >= NOTHING_CITED_FLOOR, cited
