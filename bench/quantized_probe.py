"""Would an int8 export embed documents faster without native bf16, and how close
are its vectors? A probe, not a path of the product: the issue allows int8 only
if it passes the top-10 gate against fp32 (``embed_speed.GATE``).

Quantises the cached fp32 export six ways with ONNX Runtime's tools:

- ``int8 dynamic``: every matrix product and the fused attention, weights per
  channel, activations quantised per batch at run time;
- ``int8 dynamic, MatMul only``: the fused attention stays fp32;
- ``int8 MatMulNBits``: 8-bit block-quantised weights (block 32), activations
  quantised per block (``accuracy_level`` 4);
- ``int8 dynamic, smoothed``: SmoothQuant (Xiao et al., 2023) before dynamic
  quantisation of the products that read a LayerNorm's output or the attention's
  (QKV, attention output, FFN in): each input channel is divided by
  ``s = max|X|^0.5 / max|W|^0.5`` (a ``Mul`` before the product) and the weight's
  row multiplied by it, so the fp32 result is unchanged while the activation's
  outlier channels, which one per-tensor int8 scale cannot hold, shrink. The FFN
  output stays fp32: smoothing made its error larger (overlap 0.95 -> 0.89 on
  the Xeon of 2026-11-29), as its outliers are tokens, not channels. Channel
  maxima from the speed texts (a different cut of the same articles).
- ``int8 per token`` (ZeroQuant's scheme, Yao et al., 2022): every weight product,
  the fused attention's QKV included (then ``MultiHeadAttention`` on its output),
  as ``MatMulInteger`` of activations quantised per token (one symmetric scale
  per row, so a token with large values does not coarsen the others) and 7-bit
  weights per output channel. u8 x s7 pairs cannot saturate AVX2's
  ``vpmaddubsw``, so the integer product is exact and the error is the rounding
  alone. ``int8 per token, feed-forward only`` keeps QKV and the attention
  output in fp32.

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


SMOOTH_ALPHA = 0.5
SMOOTHED = ("Attention", "attention/output/dense", "intermediate/dense")


def smoothed_export(fp32: Path, target: Path, tokenizer: Any, calibration: list[str]) -> Path:
    """``fp32`` smoothed (see the module's docstring), then dynamically quantised."""
    import onnx
    import onnxruntime
    from onnx import helper, numpy_helper
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(fp32))
    weights = {tensor.name: tensor for tensor in model.graph.initializer}
    products = [
        node
        for node in model.graph.node
        if node.op_type in ("MatMul", "Attention")
        and node.input[1] in weights
        and any(part in node.name for part in SMOOTHED)
    ]
    probe = onnx.load(str(fp32))
    for node in products:
        probe.graph.output.append(
            helper.make_tensor_value_info(node.input[0], onnx.TensorProto.FLOAT, None)
        )
    session = onnxruntime.InferenceSession(
        probe.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    peaks: list[np.ndarray] = [np.zeros(1, np.float32)] * len(products)
    for start in range(0, len(calibration), 16):
        batch = tokenizer(
            calibration[start : start + 16], padding=True, truncation=True, return_tensors="np"
        )
        feed = {name: batch[name].astype(np.int64) for name in ("input_ids", "attention_mask")}
        outputs = session.run([node.input[0] for node in products], feed)
        real = batch["attention_mask"].astype(bool)
        peaks = [
            np.maximum(peak, np.abs(output[real]).max(axis=0))
            for peak, output in zip(peaks, outputs, strict=True)
        ]
    for node, peak in zip(products, peaks, strict=True):
        weight = numpy_helper.to_array(weights[node.input[1]])
        scale = (
            np.maximum(peak, 1e-5) ** SMOOTH_ALPHA
            / np.maximum(np.abs(weight).max(axis=1), 1e-5) ** (1 - SMOOTH_ALPHA)
        ).astype(np.float32)
        weights[node.input[1]].CopyFrom(
            numpy_helper.from_array(weight * scale[:, None], node.input[1])
        )
        inverse = numpy_helper.from_array(1.0 / scale, f"{node.name}_smooth")
        model.graph.initializer.append(inverse)
        divide = helper.make_node(
            "Mul", [node.input[0], inverse.name], [f"{node.name}_smoothed"], name=inverse.name
        )
        model.graph.node.insert(list(model.graph.node).index(node), divide)
        node.input[0] = divide.output[0]
    smoothed = target.with_suffix(".fp32.onnx")
    onnx.save(model, str(smoothed))
    quantize_dynamic(
        str(smoothed),
        str(target),
        weight_type=QuantType.QInt8,
        per_channel=True,
        nodes_to_quantize=[node.name for node in products],
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
    return target


PER_TOKEN_WEIGHT_BITS = 7  # u8 x s7 pairs stay under vpmaddubsw's int16 saturation


def feed_forward(node_name: str) -> bool:
    """A layer's FFN in (``intermediate/dense``) or out (``layer.N/output/dense``)."""
    return "intermediate/dense" in node_name or (
        "/output/dense" in node_name and "/attention/" not in node_name
    )


def per_token_export(
    fp32: Path, target: Path, *, only: Callable[[str], bool] = lambda name: True
) -> Path:
    """``fp32`` with its weight products (those whose node name ``only`` accepts) as
    per-token int8 (see the module's docstring)."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(fp32))
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    constants: dict[str, np.generic] = {
        "pt_eps": np.float32(1e-8),
        "pt_127": np.float32(127),
        "pt_128": np.float32(128),
        "pt_zero_a": np.uint8(128),
        "pt_zero_b": np.int8(0),
    }
    added = [numpy_helper.from_array(np.array(v), k) for k, v in constants.items()]
    nodes: list[Any] = []

    def product(x: str, weight: np.ndarray, tag: str) -> str:
        """Nodes computing ``x @ weight`` in int8; returns the fp32 result's name."""
        top = 2 ** (PER_TOKEN_WEIGHT_BITS - 1) - 1
        scale = np.maximum(np.abs(weight).max(axis=0), 1e-8) / top
        quantised = np.clip(np.round(weight / scale), -top, top).astype(np.int8)
        added.extend(
            [
                numpy_helper.from_array(quantised, f"{tag}_w"),
                numpy_helper.from_array(scale.astype(np.float32), f"{tag}_w_scale"),
            ]
        )
        steps: list[tuple[str, list[str], str, dict[str, Any]]] = [  # op, in, out, attributes
            ("Abs", [x], "abs", {}),
            ("ReduceMax", [f"{tag}_abs"], "peak", {"axes": [-1], "keepdims": 1}),
            ("Max", [f"{tag}_peak", "pt_eps"], "peak1", {}),
            ("Div", ["pt_127", f"{tag}_peak1"], "inverse", {}),
            ("Div", [f"{tag}_peak1", "pt_127"], "scale", {}),
            ("Mul", [x, f"{tag}_inverse"], "scaled", {}),
            ("Round", [f"{tag}_scaled"], "rounded", {}),
            ("Add", [f"{tag}_rounded", "pt_128"], "shifted", {}),
            ("Cast", [f"{tag}_shifted"], "u8", {"to": onnx.TensorProto.UINT8}),
            ("MatMulInteger", [f"{tag}_u8", f"{tag}_w", "pt_zero_a", "pt_zero_b"], "i32", {}),
            ("Cast", [f"{tag}_i32"], "f32", {"to": onnx.TensorProto.FLOAT}),
            ("Mul", [f"{tag}_f32", f"{tag}_w_scale"], "by_weight", {}),
            ("Mul", [f"{tag}_by_weight", f"{tag}_scale"], "out", {}),
        ]
        for op, inputs, output, attributes in steps:
            nodes.append(helper.make_node(op, inputs, [f"{tag}_{output}"], **attributes))
        return f"{tag}_out"

    for index, node in enumerate(model.graph.node):
        wanted = only(node.name)
        tag = f"pt{index}"
        if node.op_type == "MatMul" and node.input[1] in weights and wanted:
            result = product(node.input[0], weights[node.input[1]], tag)
            nodes.append(helper.make_node("Identity", [result], list(node.output)))
        elif node.op_type == "Attention" and wanted:
            qkv = product(node.input[0], weights[node.input[1]], tag)
            hidden = weights[node.input[1]].shape[1] // 3
            added.append(numpy_helper.from_array(np.array([hidden] * 3), f"{tag}_split"))
            heads = next(a.i for a in node.attribute if a.name == "num_heads")
            parts = [f"{tag}_{name}" for name in ("q", "k", "v")]
            nodes += [
                helper.make_node("Add", [qkv, node.input[2]], [f"{tag}_qkv"]),
                helper.make_node("Split", [f"{tag}_qkv", f"{tag}_split"], parts, axis=-1),
                helper.make_node(
                    "MultiHeadAttention",
                    [*parts, "", node.input[3]],  # no bias (added above), key lengths
                    list(node.output),
                    domain="com.microsoft",
                    num_heads=heads,
                ),
            ]
        else:
            nodes.append(node)
    used = {name for node in nodes for name in node.input}
    kept = [t for t in model.graph.initializer if t.name in used]
    del model.graph.node[:], model.graph.initializer[:]
    model.graph.node.extend(nodes)
    model.graph.initializer.extend(kept + added)
    onnx.save(model, str(target))
    return target


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
        files = quantised_exports(fp32, Path(folder))
        files["int8 dynamic, smoothed"] = smoothed_export(
            fp32, Path(folder) / "smoothed.onnx", tokenizer, speed
        )
        files["int8 per token"] = per_token_export(fp32, Path(folder) / "per-token.onnx")
        files["int8 per token, feed-forward only"] = per_token_export(
            fp32, Path(folder) / "per-token-ffn.onnx", only=feed_forward
        )
        for name, file in files.items():
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
