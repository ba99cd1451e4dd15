"""A small library shared by this package's tests, ingested once through the real
worker: two SQuAD articles of the shared corpus (Acme) and a one-page rule book of
another organization (Globex), with an app each; and the gold set
``goldset_from_squad`` makes of those articles."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.core.management import call_command
from pytest_django import DjangoDbBlocker

from citations.llm_apps import app_create
from citations.models import App
from documents.models import Organization
from evaluation.squad import article_markdown
from tests import factories
from tests.conftest import wait_for_status
from tests.support.worker import WorkerProcess

ARTICLES = ("1973_oil_crisis", "Victoria_(Australia)")
GLOBEX_RULES = b"# Globex rules\n\n## Invoices\n\nGlobex keeps invoices for three years only.\n"


@dataclass
class Shelf:
    acme: Organization
    globex: Organization
    squad: App
    globex_app: App
    squad_file: Path  # the two articles as a SQuAD v1.1 file
    gold: Path  # goldset_from_squad's gold set of it


@pytest.fixture(scope="package")
def shelf(
    django_db_setup: None,
    django_db_blocker: DjangoDbBlocker,
    celery_worker: WorkerProcess,
    corpus: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Shelf]:
    folder = tmp_path_factory.mktemp("squad")
    data = json.loads((corpus / "qa/squad-v1.1-dev-subset6.json").read_text())
    articles = [a for a in data["data"] if a["title"] in ARTICLES]
    squad_file = folder / "squad-two-articles.json"
    squad_file.write_text(json.dumps({"version": "1.1", "data": articles}))
    gold = folder / "squad.jsonl"
    call_command("goldset_from_squad", str(squad_file), out=str(gold), verbosity=0)
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)
        acme, globex = factories.organization("Acme"), factories.organization("Globex")
        source = factories.data_source(acme, "SQuAD")
        uploads = [
            factories.upload(source, f"{a['title']}.md", article_markdown(a).encode()).file
            for a in articles
        ]
        uploads.append(
            factories.upload(factories.data_source(globex, "Rules"), "rules.md", GLOBEX_RULES).file
        )
        for record in uploads:
            assert wait_for_status(record.pk, timeout=300).status == "ready", record.name
        yield Shelf(
            acme=acme,
            globex=globex,
            squad=app_create(organization=acme, name="SQuAD", data_source_names=["SQuAD"]),
            globex_app=app_create(organization=globex, name="Rules", data_source_names=["Rules"]),
            squad_file=squad_file,
            gold=gold,
        )
        call_command("flush", interactive=False, verbosity=0)


def gold_sample(shelf: Shelf, folder: Path, *, every: int, count: int) -> Path:
    """Every ``every``-th line of the shelf's gold set, ``count`` of them: questions
    spread over both articles, few enough for a shared 2-core host."""
    lines = shelf.gold.read_text().splitlines()
    picked = lines[::every][:count]
    path = folder / f"sample-{every}-{count}.jsonl"
    path.write_text("\n".join(picked) + "\n")
    return path
