"""The report's plots, drawn by matplotlib off-screen (Agg: no display needed).

matplotlib is imported by the first plot, not with this module: the admin imports
it, and ~1 s of every web and worker process's start went to a library only a
report's page uses."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from evaluation.models import EvaluationItem
from evaluation.scoring import DELTA_S_LIMIT

if TYPE_CHECKING:
    from matplotlib.axes import Axes

PLOT_NAMES = ("delta_s", "latency", "first_correct_rank")


def _png(draw: Callable[[Axes], None], title: str) -> bytes:
    # a Figure object, not pyplot: no global state shared between threads of a server,
    # and no backend chosen (savefig renders with Agg, off-screen)
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6, 3.4), dpi=100)
    axes = figure.add_subplot()
    draw(axes)
    axes.set_title(title)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def delta_s_histogram(items: Sequence[EvaluationItem]) -> bytes:
    values = [i.delta_s for i in items if i.answerable and i.delta_s is not None]

    def draw(axes: Axes) -> None:
        axes.hist(values, bins=20, range=(0, 1), color="#4a6fa5", edgecolor="white")
        axes.axvline(DELTA_S_LIMIT, color="#c0392b", linestyle="--", label="target ≤ 0.45")
        axes.set_xlabel("ΔS(question, retrieved)")
        axes.set_ylabel("questions")
        axes.legend()

    return _png(draw, f"ΔS of {len(values)} answerable questions")


def latency_histogram(items: Sequence[EvaluationItem]) -> bytes:
    values = [i.latency_ms for i in items if i.latency_ms is not None]

    def draw(axes: Axes) -> None:
        axes.hist(values, bins=20, color="#5b8c5a", edgecolor="white")
        axes.set_xlabel("latency (ms)")
        axes.set_ylabel("questions")

    return _png(draw, f"Answer latency of {len(values)} questions")


def rank_chart(items: Sequence[EvaluationItem], top_k: int = 10) -> bytes:
    ranked = [i for i in items if i.answerable and i.verdict != "failed"]
    counts = [sum(i.first_correct_rank == k for i in ranked) for k in range(1, top_k + 1)]
    missing = sum(i.first_correct_rank is None for i in ranked)

    def draw(axes: Axes) -> None:
        labels = [str(k) for k in range(1, top_k + 1)] + ["none"]
        axes.bar(labels, [*counts, missing], color="#8e6c8a")
        axes.set_xlabel("rank of the first correct source among the hits")
        axes.set_ylabel("questions")

    return _png(draw, "Rank of the first correct source")


def plot_png(name: str, items: Sequence[EvaluationItem], top_k: int = 10) -> bytes:
    if name == "delta_s":
        return delta_s_histogram(items)
    if name == "latency":
        return latency_histogram(items)
    if name == "first_correct_rank":
        return rank_chart(items, top_k)
    raise KeyError(name)
