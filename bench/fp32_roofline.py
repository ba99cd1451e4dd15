"""How far fp32 embedding is from the CPU's own peak: the ceiling any fp32 runtime has.

On one thread, as a worker pool process embeds: the peak is NumPy's sgemm at the
model's feed-forward shape (its BLAS takes the widest FMA kernels the CPU offers,
AVX2 where ``scripts/avx2_only.sh`` masks the rest); the work is the model's
floating-point operations per text of the runtime choice's sample (~200 tokens),
counted from its config; each fp32 path embeds the sample texts as the runtime
choice measures them. ``ceiling_over_torch`` is how many times torch's texts/s a
runtime would embed if every operation of the model ran at the sgemm peak and
softmax, LayerNorm and GELU cost nothing: no fp32 runtime can beat it, so a
speed-up target above it needs fewer bits, not another runtime.

Run as a script (``run()`` starts it as a child process with one BLAS thread).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SGEMM_ROUNDS = 20
FP32_PATHS = ("onnxruntime", "openvino", "torch")


def sgemm_gflops(rows: int, hidden: int, intermediate: int) -> float:
    """The best of ``SGEMM_ROUNDS`` products of a batch of token states by the
    feed-forward's first weight matrix."""
    import numpy as np

    generator = np.random.default_rng(0)
    states = generator.random((rows, hidden), dtype=np.float32)
    weights = generator.random((hidden, intermediate), dtype=np.float32)
    states @ weights
    best = float("inf")
    for _ in range(SGEMM_ROUNDS):
        started = time.perf_counter()
        states @ weights
        best = min(best, time.perf_counter() - started)
    return 2 * rows * hidden * intermediate / best / 1e9


def model_gflop(config: dict[str, Any], tokens: int) -> float:
    """Floating-point operations of one text through the encoder: the projections and
    feed-forward products, plus the attention's two products (the rest is small)."""
    hidden, intermediate = config["hidden_size"], config["intermediate_size"]
    layers = config["num_hidden_layers"]
    products = 2 * tokens * layers * (4 * hidden * hidden + 2 * hidden * intermediate)
    attention = 2 * 2 * tokens * tokens * hidden * layers
    return (products + attention) / 1e9


def measure() -> dict[str, Any]:
    import django

    django.setup()
    from retrieval.embedders import MiniLmEmbedder
    from retrieval.runtime_choice import Candidate, sample_texts

    embedder = MiniLmEmbedder(precision="fp32", runtime="torch", threads=1)
    texts = sample_texts()
    tokens = round(
        sum(len(ids) for ids in embedder.tokenizer(texts, truncation=True)["input_ids"])
        / len(texts)
    )
    config = json.loads((Path(embedder.model_dir) / "config.json").read_text())
    # the runtime choice's own measurement, of the fp32 paths only
    rates = embedder.candidates_measured([Candidate("fp32", runtime) for runtime in FP32_PATHS])
    peak = sgemm_gflops(len(texts) * tokens, config["hidden_size"], config["intermediate_size"])
    work = model_gflop(config, tokens)
    torch_rate = rates[Candidate("fp32", "torch")]
    return {
        "tokens_per_text": tokens,
        "gflop_per_text": round(work, 3),
        "sgemm_gflops_one_thread": round(peak, 1),
        "texts_per_s_at_peak": round(peak / work, 1),
        "ceiling_over_torch": round(peak / work / torch_rate, 2),
        "paths": {
            candidate.name: {
                "texts_per_s": round(rate, 1),
                "gflops": round(rate * work, 1),
                "share_of_peak": round(rate * work / peak, 2),
                "over_torch": round(rate / torch_rate, 2),
            }
            for candidate, rate in rates.items()
        },
    }


def run(quick: bool = False) -> dict[str, Any]:
    from _child import run_script

    return run_script(Path(__file__).resolve(), timeout=900)


def to_markdown(result: dict[str, Any]) -> str:
    lines = [
        f"One thread, texts of {result['tokens_per_text']} tokens "
        f"({result['gflop_per_text']} GFLOP each). NumPy's sgemm at the feed-forward "
        f"shape: **{result['sgemm_gflops_one_thread']} GFLOPS**, so at most "
        f"{result['texts_per_s_at_peak']} texts/s: **{result['ceiling_over_torch']}x torch "
        "fp32** for any fp32 runtime, with every operation at that peak.",
        "",
        "| fp32 path | texts/s | GFLOPS | share of the sgemm peak | x torch fp32 |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, path in result["paths"].items():
        lines.append(
            f"| {name} | {path['texts_per_s']} | {path['gflops']} | {path['share_of_peak']} "
            f"| {path['over_torch']} |"
        )
    return "\n".join(lines)


def main() -> int:
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = "1"  # before NumPy loads its BLAS: one thread, as a worker
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "provenance_site.settings.local")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    for path in (ROOT, ROOT / "bench"):
        sys.path.insert(0, str(path))
    from _child import script_main

    return script_main(measure, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
