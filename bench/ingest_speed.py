"""End-to-end ingestion speed of a dense ≥100-page PDF: upload (hash, sniff,
store) → convert (sandboxed child process) → chunk → embed, timed per stage.

The stages run in this process one after the other, exactly the code a worker
runs for one file (one embedding process: a single file's embed stage is one
task), on a database of its own (``provenance_bench_ingest``). Run as a script
(``run()`` starts it as a child process so Django is set up there only).
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
SOURCE_PDF = CORPUS / "markitdown/test_files/test.pdf"  # the AutoGen paper: dense text


def dense_pdf(pages: int) -> bytes:
    """The paper repeated until it has ``pages`` pages."""
    import pymupdf

    source = pymupdf.open(SOURCE_PDF)
    document = pymupdf.open()
    while document.page_count < pages:
        document.insert_pdf(source, to_page=min(source.page_count, pages - document.page_count) - 1)
    return document.tobytes()


def measure(pages: int) -> dict[str, Any]:
    os.environ["PROVENANCE_DB_NAME"] = "provenance_bench_ingest"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "provenance_site.settings.local")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from documents import ingestion
    from documents.models import DataSource, Organization
    from documents.uploads import file_upload
    from retrieval.embedders import default_embedder
    from retrieval.services import vector_database_default

    organization, _ = Organization.objects.get_or_create(name="Bench")
    source, _ = DataSource.objects.get_or_create(
        organization=organization,
        name=f"ingest-{time.time_ns()}",
        defaults={"vector_database": vector_database_default(organization=organization)},
    )
    data = dense_pdf(pages)
    default_embedder().embed_documents(["warm up"])  # model load is not ingestion
    timings: dict[str, float] = {}
    started = time.perf_counter()
    record = file_upload(data_source=source, name="dense.pdf", stream=io.BytesIO(data)).file
    timings["upload"] = time.perf_counter() - started
    for name, stage in (
        ("convert", ingestion.file_convert),
        ("chunk", ingestion.file_chunk),
        ("embed", ingestion.file_embed),
    ):
        t0 = time.perf_counter()
        assert stage(file_id=str(record.pk)), f"stage {name} did not run"
        timings[name] = time.perf_counter() - t0
    total = time.perf_counter() - started
    record.refresh_from_db()
    chunks = record.chunks.count()
    return {
        "pdf": f"{SOURCE_PDF.name} repeated to {pages} pages ({len(data)} bytes)",
        "status": record.status,
        "pages": pages,
        "chunks": chunks,
        "seconds": {k: round(v, 3) for k, v in timings.items()} | {"total": round(total, 3)},
        "end_to_end_pages_per_s": round(pages / total, 1),
        "convert_pages_per_s": round(pages / timings["convert"], 1),
        "chunk_embed_chunks_per_s": round(chunks / (timings["chunk"] + timings["embed"]), 1),
        "embed_chunks_per_s": round(chunks / timings["embed"], 1),
        "targets": {"end_to_end >= 20 pages/s": pages / total >= 20},
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def run(quick: bool = False) -> dict[str, Any]:
    from _child import run_script

    return run_script(Path(__file__).resolve(), "--pages", "100", timeout=1800)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--output")
    args = parser.parse_args()
    result = measure(args.pages)
    text = json.dumps(result, indent=2)
    if args.output:
        Path(args.output).write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
