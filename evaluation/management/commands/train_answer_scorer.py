"""Fit the extractive generator's answer scorer and write its model file and report."""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.scorer_training import (
    REPORT_PATH,
    SQUAD_QUESTIONS_PER_ARTICLE,
    TRAIN_SEEDS,
    gather,
    model_document,
    train,
    write,
)
from evaluation.squad import SquadError, squad_load

DEFAULT_SQUAD = Path(__file__).resolve().parents[4] / "shared/corpus/qa/squad-v1.1-dev-subset6.json"


def _host() -> str:
    """The CPU model and its vector flags, as every figure is reported with."""
    model, flags = platform.processor() or "unknown CPU", []
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and model == (platform.processor() or "unknown CPU"):
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                have = set(line.split(":", 1)[1].split())
                flags = [f for f in ("avx2", "avx512f", "avx512_vnni", "amx_tile") if f in have]
                break
    except OSError:
        pass
    return f"{model} ({', '.join(flags) or 'no AVX2'})"


class Command(BaseCommand):
    help = (
        "Generate the labelled questions (forms in every layout, SQuAD prose, withheld "
        "documents), fit the answer scorer on the training split, choose its thresholds, "
        "evaluate it on the test split and write answer_scorer.json and its report."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--squad", type=Path, default=DEFAULT_SQUAD, help="SQuAD v1.1 JSON")
        parser.add_argument(
            "--dry-run", action="store_true", help="print the test report, write nothing"
        )
        parser.add_argument(
            "--train-seeds",
            type=int,
            default=len(TRAIN_SEEDS),
            help=f"form seeds to train on (default {len(TRAIN_SEEDS)}; fewer: a quick run)",
        )
        parser.add_argument(
            "--squad-per-article",
            type=int,
            default=SQUAD_QUESTIONS_PER_ARTICLE,
            help="SQuAD questions of each training article",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["squad"]
        try:
            articles = squad_load(path.read_bytes())
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
        except SquadError as exc:
            raise CommandError(f"{path}: {exc}") from exc
        seeds, per_article = options["train_seeds"], options["squad_per_article"]
        if not 1 <= seeds <= len(TRAIN_SEEDS) or per_article < 1:
            raise CommandError(
                f"--train-seeds must be 1 to {len(TRAIN_SEEDS)}, --squad-per-article at least 1"
            )
        full = (seeds, per_article) == (len(TRAIN_SEEDS), SQUAD_QUESTIONS_PER_ARTICLE)
        if not options["dry_run"] and not full:
            raise CommandError("a smaller run is for --dry-run only: the model is fitted on all")
        gathered = gather(
            articles,
            progress=lambda line: self.stdout.write(line),
            train_seeds=range(seeds),
            squad_per_article=per_article,
        )
        scorer, report = train(gathered)
        document = model_document(scorer, report)
        self.stdout.write(json.dumps(report, indent=1))
        if not options["dry_run"]:
            write(document, _host())
            self.stdout.write(self.style.SUCCESS(f"wrote the model and {REPORT_PATH}"))
