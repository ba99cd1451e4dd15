"""Evaluate an app on a gold set through the real answer path; write the report."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from citations.llm_apps import app_find
from citations.models import App
from documents.models import Organization
from evaluation.goldsets import GoldSetError, goldset_parse
from evaluation.models import EvaluationItem, EvaluationOutcome
from evaluation.recipe import RECIPE_PARAPHRASES, RECIPE_SEEDS
from evaluation.reports import report_write, run_warnings
from evaluation.scoring import TARGETS
from evaluation.services import EvaluationError, evaluation_run_advance, evaluation_run_create

TARGET_MISSED = 2  # exit status when a --require'd target is missed (1: bad input)
BAR_WIDTH = 30


class Command(BaseCommand):
    help = (
        "Ask every question and paraphrase of a gold set (JSON Lines) of an app, record "
        "the run and its items (append-only, chained) and write report.json, report.md "
        "and plots. Exit 2 when a --require'd target is missed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--app", required=True, help="app name or id")
        parser.add_argument("--organization", help="the app's organization (name)")
        parser.add_argument("--gold", type=Path, required=True, help="the gold set (.jsonl)")
        parser.add_argument(
            "--seeds",
            type=int,
            default=RECIPE_SEEDS,
            help=f"repeat the run N times (default {RECIPE_SEEDS}, the recipe's)",
        )
        parser.add_argument(
            "--paraphrases",
            type=int,
            default=RECIPE_PARAPHRASES,
            help="ask each question's first N paraphrases besides it "
            f"(default {RECIPE_PARAPHRASES}, the recipe's)",
        )
        parser.add_argument("--limit", type=int, help="the first N items only")
        parser.add_argument("--out", type=Path, help="report folder (var/evaluations/RUN)")
        parser.add_argument("--base-url", default="", help="origin of the report's links")
        parser.add_argument(
            "--require",
            action="append",
            default=[],
            choices=[*TARGETS, "all"],
            help="fail (exit 2) when this target is missed; repeatable",
        )

    def handle(self, *args: object, **options: Any) -> None:
        gold_path = Path(options["gold"])
        try:
            gold = goldset_parse(name=gold_path.name, data=gold_path.read_bytes())
        except OSError as exc:
            raise CommandError(f"cannot read {gold_path}: {exc.strerror}") from exc
        except GoldSetError as exc:
            raise CommandError(f"{gold_path}: {exc}") from exc
        app = _app(str(options["app"]), options["organization"])
        try:
            run = evaluation_run_create(
                app=app,
                gold=gold,
                seeds=options["seeds"],
                limit=options["limit"],
                paraphrases=options["paraphrases"],
            )
        except EvaluationError as exc:
            raise CommandError(str(exc)) from exc
        for warning in run_warnings(run):
            self.stderr.write(f"warning: {warning}")
        self.stdout.write(f"evaluation run {run.pk}: {run.total} questions")
        evaluation_run_advance(run_id=run.pk, seconds=None, on_item=self._progress(run.total))
        default = settings.VAR_DIR / "evaluations" / str(run.pk)
        folder = Path(options["out"]) if options["out"] else default
        report_write(run, folder, str(options["base_url"]))
        outcome = EvaluationOutcome.objects.get(run=run)
        self._summary(outcome.figures, folder)
        self._require(outcome.figures["targets"], options["require"])

    def _progress(self, total: int) -> Callable[[EvaluationItem, int], None]:
        tty = sys.stderr.isatty()
        step = max(1, total // 10)

        def show(item: EvaluationItem, done: int) -> None:
            if not tty and done % step and done != total:
                return
            filled = BAR_WIDTH * done // total
            bar = "#" * filled + "-" * (BAR_WIDTH - filled)
            end = "\n" if done == total or not tty else ""
            self.stderr.write(f"\r[{bar}] {done}/{total} {item.verdict:<22}", ending=end)
            self.stderr.flush()

        return show

    def _summary(self, figures: dict, folder: Path) -> None:
        for name, target in figures["targets"].items():
            met = {None: "–", True: "met", False: "MISSED"}[target["met"]]
            self.stdout.write(
                f"{name}: {target['value']} ({target['op']} {target['target']}: {met})"
            )
        for name in ("answer_coverage", "abstention_rate", "false_abstention_rate", "mrr"):
            self.stdout.write(f"{name}: {figures[name]}")
        self.stdout.write(f"lambda_questions: {figures['lambda_questions']}")
        self.stdout.write(
            f"latency p50/p95: {figures['latency_p50_ms']}/{figures['latency_p95_ms']} ms; "
            f"validator: {figures['validator']}"
        )
        if figures.get("seed_agreement") is not None:
            self.stdout.write(f"seed_agreement: {figures['seed_agreement']}")
        self.stdout.write(f"report: {folder}/report.md")

    def _require(self, targets: dict, required: list[str]) -> None:
        names = list(targets) if "all" in required else required
        missed = [n for n in names if targets[n]["met"] is False]
        if missed:
            raise CommandError(f"target(s) missed: {', '.join(missed)}", returncode=TARGET_MISSED)


def _app(wanted: str, organization_name: object) -> App:
    """The app by name or id, in ``organization_name`` when given."""
    apps = App.objects.select_related("organization")
    by_id = app_find(app_id=wanted)
    found = list(apps.filter(name=wanted)) or ([by_id] if by_id else [])
    if organization_name:
        organization = Organization.objects.filter(name=organization_name).first()
        if organization is None:
            raise CommandError(f"unknown organization {organization_name!r}")
        mine = [a for a in found if a.organization_id == organization.pk]
        if found and not mine:
            raise CommandError(f"app {wanted!r} belongs to another organization")
        found = mine
    if not found:
        raise CommandError(f"unknown app {wanted!r}")
    if len(found) > 1:
        raise CommandError(f"several apps are named {wanted!r}; pass --organization or its id")
    return found[0]
