"""How long a worker or web process takes from its start to a warm embedder, and
its peak memory, per document path.

Each round is a fresh Python process: ``django.setup()``, the default embedder
built, one document and one question embedded (what a worker pool process's
warm-up and a web process's first question do). A process on an export path
imports neither torch nor sentence-transformers (``retrieval/model_tokenizer.py``);
the torch path does, and is measured beside them for the difference.

Usage: python bench/process_start.py [--quick]   (prints JSON)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ROUNDS = 3
PATHS = {  # name: (PROVENANCE_EMBED_PRECISION, PROVENANCE_EMBED_RUNTIME)
    "the measured choice": ("auto", "auto"),
    "fp32 on ONNX Runtime": ("fp32", "onnxruntime"),
    "fp32 on OpenVINO": ("fp32", "openvino"),
    "fp32 on torch": ("fp32", "torch"),
}
CHILD = """
import json, resource, sys, time
started = time.perf_counter()
import django
django.setup()
set_up = time.perf_counter()
from retrieval.embedders import default_embedder
embedder = default_embedder()
embedder.embed_documents(["Invoices are kept for seven years after the fiscal year ends."])
embedder.embed_query("How long are invoices kept?")
warm = time.perf_counter()
print(json.dumps({
    "django_s": set_up - started,
    "warm_s": warm - started,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "path": f"{embedder.precision} {embedder.documents_runtime}",
    "torch_imported": "torch" in sys.modules,
}))
"""


def _once(precision: str, runtime: str) -> dict[str, Any]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "PROVENANCE_EMBED_PRECISION": precision,
        "PROVENANCE_EMBED_RUNTIME": runtime,
    }
    env.setdefault("DJANGO_SETTINGS_MODULE", "provenance_site.settings.local")
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(quick: bool = False) -> dict[str, Any]:
    rounds = 1 if quick else ROUNDS
    _once("auto", "auto")  # the export and the measured choice exist before timing
    figures: dict[str, Any] = {}
    for name, (precision, runtime) in PATHS.items():
        samples = [_once(precision, runtime) for _ in range(rounds)]
        figures[name] = {
            "path": samples[0]["path"],
            "torch_imported": samples[0]["torch_imported"],
            "rounds": rounds,
            "django_setup_s_median": round(statistics.median(s["django_s"] for s in samples), 2),
            "warm_s_median": round(statistics.median(s["warm_s"] for s in samples), 2),
            "warm_s_max": round(max(s["warm_s"] for s in samples), 2),
            "peak_rss_mb_max": round(max(s["peak_rss_mb"] for s in samples)),
        }
    return {"paths": figures}


def to_markdown(result: dict[str, Any]) -> str:
    lines = [
        "A fresh process: `django.setup()`, then one document and one question embedded.",
        "",
        "| path asked | path run | torch imported | django.setup() s | start to warm s "
        "(median, max) | peak RSS MB |",
        "|---|---|---|---:|---:|---:|",
    ]
    for name, f in result["paths"].items():
        lines.append(
            f"| {name} | {f['path']} | {'yes' if f['torch_imported'] else 'no'} "
            f"| {f['django_setup_s_median']} | {f['warm_s_median']}, {f['warm_s_max']} "
            f"| {f['peak_rss_mb_max']} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(json.dumps(run("--quick" in sys.argv), indent=2))
