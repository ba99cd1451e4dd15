"""The report of a run: report.json, report.md and the PNG plots."""

from __future__ import annotations

import json
from pathlib import Path

from evaluation.goldsets import GoldItem
from evaluation.models import EvaluationItem, EvaluationOutcome, EvaluationRun
from evaluation.plots import PLOT_NAMES, plot_png
from evaluation.recipe import recipe_warnings
from evaluation.scoring import targets_compare, worst_first
from evaluation.services import run_status

WORST_SHOWN = 20
HEADLINE = (
    "citation_match_rate",
    "coverage",
    "answer_coverage",
    "delta_s_over_045",
    "lambda_convergent",
    "lambda_questions",
    "abstention_rate",
    "false_abstention_rate",
    "latency_p50_ms",
    "latency_p95_ms",
    "mrr",
)


def query_link(query_id: object, base_url: str = "") -> str:
    return f"{base_url.rstrip('/')}/admin/citations/queryexecution/{query_id}/change/"


def item_record(item: EvaluationItem) -> dict:
    return {
        "position": item.position,
        "line": item.line,
        "seed": item.seed,
        "variant": item.variant,
        "question": item.question,
        "query_id": str(item.query_id) if item.query_id else None,
        "answer": item.answer,
        "cited": item.cited,
        "expected": item.expected,
        "answerable": item.answerable,
        "first_correct_rank": item.first_correct_rank,
        "delta_s": item.delta_s,
        "validator": item.validator_status,
        "latency_ms": item.latency_ms,
        "verdict": item.verdict,
        "error": item.error_message,
    }


def run_warnings(run: EvaluationRun) -> list[str]:
    """The run's own warnings (unknown expected documents), then what it lacks of the
    evaluation recipe (evaluation/recipe.py), read from the items as asked."""
    items = [GoldItem.from_json(data) for data in run.gold_items]
    return [*run.warnings, *recipe_warnings(items=items, seeds=run.seeds)]


def report_json(run: EvaluationRun) -> dict:
    outcome = EvaluationOutcome.objects.filter(run=run).first()
    figures = outcome.figures if outcome else {}
    return {
        "run_id": str(run.pk),
        "status": run_status(run),
        "app": {"id": str(run.app_id), **run.app_settings},
        "gold": {"name": run.gold_name, "sha256": run.gold_sha256, "items": len(run.gold_items)},
        "seeds": run.seeds,
        "started_by": run.started_by_label,
        "started_at": run.created_at.isoformat(),
        "finished_at": outcome.finished_at.isoformat() if outcome else None,
        "warnings": run_warnings(run),
        **figures,
        "items": [item_record(i) for i in run.items.order_by("position")],
    }


def _value(value: object) -> str:
    return "–" if value is None else str(value)


def report_markdown(run: EvaluationRun, base_url: str = "") -> str:
    data = report_json(run)
    lines = [
        f"# Evaluation of {run.app_settings.get('name', run.app_id)} on {run.gold_name}",
        "",
        f"- run `{run.pk}`, {data['status']}, started {data['started_at']} by "
        f"{run.started_by_label}",
        f"- gold set sha256 `{run.gold_sha256}`, {len(run.gold_items)} items, "
        f"{data.get('questions', 0)} questions asked ({run.seeds} seed(s))",
        f"- settings: {json.dumps(run.app_settings, sort_keys=True)}",
        *[f"- warning: {w}" for w in data["warnings"]],
        "",
        "## Figures",
        "",
        "| figure | value |",
        "|---|---|",
        *[f"| `{name}` | {_value(data.get(name))} |" for name in HEADLINE],
        f"| `recall_at` | {_value(data.get('recall_at'))} |",
        f"| `validator` | {_value(data.get('validator'))} |",
        f"| `seed_agreement` | {_value(data.get('seed_agreement'))} |",
        f"| `written_by` | {_value(data.get('written_by'))} |",
        f"| `fallback_reasons` | {_value(data.get('fallback_reasons'))} |",
        f"| `model_answer_coverage` | {_value(data.get('model_answer_coverage'))} |",
        f"| `fallback_answer_coverage` | {_value(data.get('fallback_answer_coverage'))} |",
        "",
        "## Targets",
        "",
        "| figure | target | value | met |",
        "|---|---|---|---|",
        *[
            f"| `{name}` | {t['op']} {t['target']} | {_value(t['value'])} | "
            f"{'–' if t['met'] is None else ('yes' if t['met'] else 'NO')} |"
            for name, t in targets_compare(data).items()
        ],
        "",
        f"## The {WORST_SHOWN} worst items",
        "",
        "| # | line | verdict | ΔS | question | answer |",
        "|---|---|---|---|---|---|",
        *[_worst_row(i, base_url) for i in worst_first(list(run.items.all()))[:WORST_SHOWN]],
        "",
        *[f"![{name}]({name}.png)" for name in PLOT_NAMES],
        "",
    ]
    return "\n".join(lines)


def _cell(text: str, limit: int = 90) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _worst_row(item: EvaluationItem, base_url: str) -> str:
    number = (
        f"[{item.position}]({query_link(item.query_id, base_url)})"
        if item.query_id
        else str(item.position)
    )
    delta = "–" if item.delta_s is None else f"{item.delta_s:.2f}"
    return (
        f"| {number} | {item.line} | {item.verdict} | {delta} | {_cell(item.question)} | "
        f"{_cell(item.answer or item.error_message)} |"
    )


def report_write(run: EvaluationRun, folder: Path, base_url: str = "") -> list[Path]:
    """Write report.json, report.md and the plots into ``folder``; the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    items = list(run.items.order_by("position"))
    written = [folder / "report.json", folder / "report.md"]
    written[0].write_text(json.dumps(report_json(run), indent=2, ensure_ascii=False) + "\n")
    written[1].write_text(report_markdown(run, base_url))
    top_k = int(run.app_settings.get("top_k", 10))
    for name in PLOT_NAMES:
        path = folder / f"{name}.png"
        path.write_bytes(plot_png(name, items, top_k))
        written.append(path)
    return written
