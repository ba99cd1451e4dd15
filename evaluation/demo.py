"""The demo's evaluation: the "Handbook" app of the demo organization measured on the
shipped gold set over the demo documents, once they are all ingested."""

from __future__ import annotations

from pathlib import Path

from django.db import connection, transaction

from citations.models import App
from documents.models import File, FileStatus
from evaluation.goldsets import goldset_parse
from evaluation.models import EvaluationRun
from evaluation.services import evaluation_run_start

DEMO_GOLD = Path(__file__).resolve().parent / "goldsets" / "demo-handbook.jsonl"
DEMO_ORGANIZATION, DEMO_APP = "Demo", "Handbook"
SETTLED = (FileStatus.READY, FileStatus.FAILED)


DEMO_LOCK = 0x44454D4F  # "DEMO": one demo evaluation starts, however often this is called


@transaction.atomic
def demo_evaluation_ensure() -> str:
    """Start the demo evaluation unless one of this gold set exists: "started",
    "exists", "waiting" (documents still ingesting) or "no demo app"."""
    app = App.objects.filter(organization__name=DEMO_ORGANIZATION, name=DEMO_APP).first()
    if app is None:
        return "no demo app"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [DEMO_LOCK])
    gold = goldset_parse(name=DEMO_GOLD.name, data=DEMO_GOLD.read_bytes())
    if EvaluationRun.objects.filter(app=app, gold_sha256=gold.sha256).exists():
        return "exists"
    files = File.objects.filter(data_source__apps=app)
    if not files.exists() or files.exclude(status__in=SETTLED).exists():
        return "waiting"
    evaluation_run_start(app=app, gold=gold, origin="demo")
    return "started"
