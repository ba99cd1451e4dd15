"""Evaluation runs, items and outcomes are evidence: the database refuses to update,
delete or truncate them."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction

from evaluation.models import EvaluationItem, EvaluationOutcome, EvaluationRun
from tests.evaluation.conftest import Shelf, gold_sample

pytestmark = pytest.mark.django_db

MODELS = [EvaluationRun, EvaluationItem, EvaluationOutcome]


@pytest.fixture
def run(shelf: Shelf, tmp_path: Path) -> EvaluationRun:
    gold = gold_sample(shelf, tmp_path, every=50, count=2)
    call_command("evaluate", app="SQuAD", gold=str(gold), seeds=1)
    return EvaluationRun.objects.latest("created_at")


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_update_and_delete_are_refused(
    run: EvaluationRun, model: type[EvaluationRun | EvaluationItem | EvaluationOutcome]
) -> None:
    table = model._meta.db_table
    for statement in (
        f"UPDATE {table} SET organization_id = organization_id",
        f"DELETE FROM {table}",
    ):
        with (
            pytest.raises(DatabaseError, match=f"append-only: .* on {table} refused"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(statement)
    assert model.objects.exists()


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_truncate_is_refused(
    run: EvaluationRun, model: type[EvaluationRun | EvaluationItem | EvaluationOutcome]
) -> None:
    table = model._meta.db_table
    before = model.objects.count()
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    with (
        pytest.raises(DatabaseError, match=f"append-only: TRUNCATE on {table} refused"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(f'TRUNCATE "{table}" CASCADE')
    assert model.objects.count() == before
