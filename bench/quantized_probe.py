"""Would an int8 export embed documents faster without native bf16, and how close
are its vectors? A probe, not a path of the product: the issue allows int8 only
if it passes the top-10 gate against fp32 (``embed_speed.GATE``).

Quantises the cached fp32 export three ways with ONNX Runtime's tools:

- ``int8 dynamic``: every matrix product and the fused attention, weights per
  channel, activations quantised per batch at run time;
- ``int8 dynamic, MatMul only``: the fused attention stays fp32;
- ``int8 MatMulNBits``: 8-bit block-quantised weights (block 32), activations
  quantised per block (``accuracy_level`` 4).

Speed: texts/s on one thread (as one worker process embeds), 64 SQuAD chunks of
200 tokens in the worker's forward batches, the best of three rounds in a row
per path, beside torch fp32, ONNX Runtime fp32 and OpenVINO fp32. Quality against
ONNX Runtime fp32 (the same vectors as torch fp32 to cosine 0.99999): per-text
cosine, and the mean overlap of 50 SQuAD questions' top-10 among 1,000 pieces.

Usage: python bench/quantized_probe.py [--output FILE]  (~8 min on 2 vCPUs)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "bench"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SPEED_TEXTS, PIECES, QUESTIONS, ROUNDS = 64, 1000, 50, 3


def quantised_exports(fp32: Path, folder: Path) -> dict[str, Path]:
    """The three int8 files, written to ``folder``."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # the fused graph's contrib ops have no inferred types: their outputs are fp32
    options = {"DefaultTensorType": onnx.TensorProto.FLOAT}
    files = {
        "int8 dynamic": folder / "dynamic.onnx",
        "int8 dynamic, MatMul only": folder / "dynamic-matmul.onnx",
        "int8 MatMulNBits": folder / "nbits.onnx",
    }
    quantize_dynamic(
        str(fp32),
        str(files["int8 dynamic"]),
        weight_type=QuantType.QInt8,
        per_channel=True,
        extra_options=options,
    )
    quantize_dynamic(
        str(fp32),
        str(files["int8 dynamic, MatMul only"]),
        weight_type=QuantType.QInt8,
        per_channel=True,
        op_types_to_quantize=["MatMul"],
        extra_options=options,
    )
    try:  # needs onnx-ir, which the product does not: `pip install onnx-ir` to probe it
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    except ImportError as error:
        print(f"   int8 MatMulNBits not probed: {error}", file=sys.stderr)
        del files["int8 MatMulNBits"]
        return files
    quantizer = MatMulNBitsQuantizer(
        onnx.load(str(fp32)), bits=8, block_size=32, is_symmetric=True, accuracy_level=4
    )
    quantizer.process()
    quantizer.model.save_model_to_file(str(files["int8 MatMulNBits"]))
    return files


def texts_per_s(encode: Callable[[list[str]], object], texts: list[str]) -> float:
    encode(texts[:16])
    best = 0.0
    for _ in range(ROUNDS):
        started = time.perf_counter()
        encode(texts)
        best = max(best, len(texts) / (time.perf_counter() - started))
    return best


def measure() -> dict[str, Any]:
    import embed_speed
    import torch
    from run import machine_info

    from retrieval.embedders import FORWARD_BATCH, PAD_TO_MULTIPLE, MiniLmEmbedder
    from retrieval.onnx_query import OnnxQueryEncoder, OpenVinoQueryEncoder, _exported

    torch.set_num_threads(1)
    load_before = [round(x, 2) for x in os.getloadavg()]
    embedder = MiniLmEmbedder(precision="fp32", runtime="torch", threads=1)
    tokenizer = embedder.model.tokenizer
    fp32 = _exported(embedder.model_dir, tokenizer)
    articles, questions = embed_speed.squad()
    speed = embed_speed.speed_texts(articles, tokenizer, SPEED_TEXTS)
    pieces = embed_speed.quality_pieces(articles, tokenizer, PIECES)
    asked = [questions[i * len(questions) // QUESTIONS][0] for i in range(QUESTIONS)]

    def batches(encoder: Any) -> Callable[[list[str]], np.ndarray]:
        return lambda texts: encoder.encode_many(
            texts, batch_size=FORWARD_BATCH, pad_to_multiple=PAD_TO_MULTIPLE
        )

    reference = OnnxQueryEncoder(fp32, tokenizer, threads=1)
    reference_pieces, reference_questions = batches(reference)(pieces), reference.encode_many(asked)
    reference_top = embed_speed.top_k(reference_questions, reference_pieces, 10)
    rows: dict[str, dict[str, Any]] = {
        "fp32 torch": {"texts_per_s": texts_per_s(embedder._torch_documents, speed)},
        "fp32 onnxruntime": {"texts_per_s": texts_per_s(batches(reference), speed)},
    }
    openvino = OpenVinoQueryEncoder(fp32, tokenizer, threads=1, precision="fp32")
    rows["fp32 openvino"] = {"texts_per_s": texts_per_s(batches(openvino), speed)}
    with tempfile.TemporaryDirectory() as folder:
        for name, file in quantised_exports(fp32, Path(folder)).items():
            encoder = OnnxQueryEncoder(file, tokenizer, threads=1)
            vectors = batches(encoder)(pieces)
            top = embed_speed.top_k(encoder.encode_many(asked), vectors, 10)
            cosines = np.sum(vectors * reference_pieces, axis=1)
            rows[name] = {
                "texts_per_s": texts_per_s(batches(encoder), speed),
                "file_mb": round(file.stat().st_size / 2**20, 1),
                "cosine_to_fp32_min": round(float(cosines.min()), 5),
                "cosine_to_fp32_mean": round(float(cosines.mean()), 5),
                "mean_overlap_at_10": round(
                    float(embed_speed.overlap_at_k(reference_top, top).mean()), 4
                ),
            }
            print(f"   {name}: {rows[name]}", file=sys.stderr, flush=True)
    torch_rate = rows["fp32 torch"]["texts_per_s"]
    for row in rows.values():
        row["texts_per_s"] = round(row["texts_per_s"], 2)
        row["x_torch_fp32"] = round(row["texts_per_s"] / torch_rate, 2)
    return {
        "machine": machine_info(),
        "loadavg_before": load_before,
        "speed_texts": SPEED_TEXTS,
        "speed_text_tokens": embed_speed.CHUNK_TOKENS + 2,
        "quality": {"pieces": len(pieces), "questions": len(asked), "gate": embed_speed.GATE},
        "rows": rows,
    }


def to_markdown(result: dict[str, Any]) -> str:
    machine = result["machine"]
    flags = ", ".join(machine["bf16_flags"]) or "none"
    lines = [
        "# int8 probe (bench/quantized_probe.py)",
        "",
        f"Host: {machine['cpu_count']} CPUs, {machine['cpu_model']}, bf16 flags {flags}; "
        f"load average before {result['loadavg_before']}, after {machine['loadavg']}.",
        "",
        f"Speed: {result['speed_texts']} chunks of {result['speed_text_tokens']} tokens on one "
        f"thread. Quality against ONNX Runtime fp32: {result['quality']['questions']} questions' "
        f"top-10 among {result['quality']['pieces']} pieces (the product's gate: mean overlap "
        f">= {result['quality']['gate']}).",
        "",
        "| path | texts/s | x torch fp32 | cosine min | cosine mean | overlap@10 | MB |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in result["rows"].items():
        cells = [row.get(k, "") for k in ("cosine_to_fp32_min", "cosine_to_fp32_mean")]
        lines.append(
            f"| {name} | {row['texts_per_s']} | {row['x_torch_fp32']} | {cells[0]} | {cells[1]} "
            f"| {row.get('mean_overlap_at_10', '')} | {row.get('file_mb', '')} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", help="write FILE.json and FILE.md instead of printing")
    args = parser.parse_args()
    result = measure()
    if args.output:
        Path(f"{args.output}.json").write_text(json.dumps(result, indent=2) + "\n")
        Path(f"{args.output}.md").write_text(to_markdown(result))
    else:
        print(to_markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
