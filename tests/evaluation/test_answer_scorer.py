"""The answer scorer's model file and its training command: the committed model is
what the code computes and is read without fitting; a model of other features is
refused; retraining is one command that reports on a split it never fitted on, and
refuses bad input."""

from __future__ import annotations

import hashlib
import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from citations.generators.extractive.features import FEATURES
from citations.generators.extractive.scorer import (
    MODEL_PATH,
    ScorerMismatch,
    answer_scorer,
    scorer_from,
)
from evaluation.scorer_training import REPORT_PATH, TEST_SEEDS, TRAIN_SEEDS


def test_the_committed_scorer_reads_the_features_the_code_computes() -> None:
    document = json.loads(MODEL_PATH.read_text())
    assert tuple(document["features"]) == FEATURES
    scorer = answer_scorer()
    assert 0 < scorer.abstain_below < scorer.high_at < 1
    assert scorer.trees, "a fitted model has trees"
    # every number it uses says where it came from, and the report is of the test split
    assert set(document["thresholds_provenance"]) == set(document["thresholds"])
    assert document["test_report"]["layouts"] and document["test_report"]["reliability"]
    assert REPORT_PATH.read_text().startswith("# Answer scorer: training report")
    assert not set(TRAIN_SEEDS) & set(TEST_SEEDS)


def test_probabilities_are_probabilities_and_rank_a_closer_candidate_higher() -> None:
    scorer = answer_scorer()
    far = [0.0] * len(FEATURES)
    close = list(far)
    for name in ("similarity", "overlap", "rare_overlap", "own_share", "label_similarity"):
        close[FEATURES.index(name)] = 0.9
    low, high = scorer.probabilities([far, close])
    assert 0.0 <= low < high <= 1.0


def test_a_model_fitted_on_other_features_is_refused() -> None:
    document = json.loads(MODEL_PATH.read_text())
    document["features"] = [*document["features"][:-1], "something_else"]
    with pytest.raises(ScorerMismatch, match="make train-scorer"):
        scorer_from(document)


def test_a_quick_dry_run_reports_on_the_test_split_and_writes_nothing() -> None:
    before = hashlib.sha256(MODEL_PATH.read_bytes()).hexdigest()
    out = StringIO()
    call_command(
        "train_answer_scorer",
        "--dry-run",
        "--train-seeds",
        "1",
        "--squad-per-article",
        "8",
        stdout=out,
    )
    text = out.getvalue()
    report = json.loads(text[text.index("\n{") + 1 :])
    assert set(report["layouts"]) >= {"docx_tables", "pdf_borderless", "markdown_lists", "prose"}
    for figures in report["layouts"].values():
        assert figures["questions"] > 0 and 0.0 <= figures["share"] <= 1.0
    assert report["unanswerable"]["questions"] > 0
    assert report["training"]["candidates"] > report["training"]["positives"] > 0
    assert hashlib.sha256(MODEL_PATH.read_bytes()).hexdigest() == before


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--squad", "/nonexistent/squad.json"], "cannot read"),
        (["--train-seeds", "0", "--dry-run"], "--train-seeds must be"),
        (["--train-seeds", "2"], "for --dry-run only"),
    ],
)
def test_bad_arguments_are_refused_clearly(arguments: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("train_answer_scorer", *arguments)


def test_a_file_that_is_not_squad_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "not-squad.json"
    path.write_text('{"rows": []}')
    with pytest.raises(CommandError, match="not a SQuAD file"):
        call_command("train_answer_scorer", "--squad", str(path))
