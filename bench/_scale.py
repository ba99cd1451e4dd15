"""Helpers of the scale run of ``retrieval_latency.py`` (1M chunks): perturbed copies of
the real vectors, the memory an HNSW build takes, and what the data set costs on disk.

Perturbed copies. There are ~100k distinct real texts; the other 900k chunks are
copies of them whose vectors are moved off the original: ``normalize(v + sigma * g)``
with ``g`` standard Gaussian in all 384 dimensions. For a unit ``v`` the noise has
norm ~ ``sigma * sqrt(d)``, so the copy's cosine to ``v`` is ~ ``1 / sqrt(1 + sigma^2 d)``;
``sigma`` is chosen for a mean of ``COPY_COSINE`` (0.8): distinct points, not
near-duplicates (two copies of one original are at ~0.64 of each other). A copy's
text is its original's, repeated, so rows, TOAST and full-text postings have the
sizes of real chunks.

Build memory. pgvector builds the HNSW graph in memory; a parallel build reserves one
shared-memory area of ``maintenance_work_mem`` (less 3 MB) up front (posix shared
memory: ``/dev/shm``) that the leader and its worker fill. ``BuildMemory`` samples,
from ``/proc``, the backend's and its parallel workers' RSS and the pages of that
area they have touched, and the space ``/dev/shm`` holds.
"""

from __future__ import annotations

import math
import re
import shutil
import threading
from pathlib import Path
from typing import Any

import numpy as np

COPY_COSINE = 0.8  # mean cosine of a perturbed copy to its original
MB = 1024 * 1024
_DSM = re.compile(r"/(?:dev/shm/)?PostgreSQL\.\d+")


# --- perturbed copies -----------------------------------------------------------------


def copy_sigma(dimensions: int, cosine: float = COPY_COSINE) -> float:
    """The Gaussian noise's sigma that puts ``normalize(v + sigma g)`` at ``cosine``
    to a unit ``v``: ``1 / sqrt(1 + sigma^2 d) = cosine``."""
    return math.sqrt(1 / cosine**2 - 1) / math.sqrt(dimensions)


def perturbed(vectors: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """Unit rows ``normalize(v + sigma g)``, one per row of ``vectors``."""
    noise = rng.standard_normal(vectors.shape, dtype=np.float32)
    moved = vectors + np.float32(sigma) * noise
    return moved / np.linalg.norm(moved, axis=1, keepdims=True)


def copies_of(
    vectors: np.ndarray, copies: int, rng: np.random.Generator
) -> tuple[np.ndarray, dict[str, Any]]:
    """``vectors`` followed by ``copies - 1`` perturbed copies of every row (copy k of
    row i is row ``k * len(vectors) + i``), and how far the copies are."""
    sigma = copy_sigma(vectors.shape[1])
    blocks = [vectors] + [perturbed(vectors, sigma, rng) for _ in range(copies - 1)]
    to_original = np.concatenate([_row_cosines(b, vectors) for b in blocks[1:]])
    figures = {
        "copies_per_real_chunk": copies - 1,
        "sigma": round(sigma, 6),
        "target_cosine": COPY_COSINE,
        "cosine_to_original_mean": round(float(to_original.mean()), 4),
        "cosine_to_original_p5_p95": [
            round(float(np.percentile(to_original, q)), 4) for q in (5, 95)
        ],
        "cosine_between_two_copies_mean": (
            round(float(_row_cosines(blocks[1], blocks[2]).mean()), 4) if copies > 2 else None
        ),
    }
    return np.concatenate(blocks), figures


def _row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", a, b, dtype=np.float64)


def copy_note(counts: dict[str, Any]) -> str:
    """How the perturbed vectors were made, from the counts stored with the data."""
    copies = counts.get("perturbed_copies") or {}
    if not counts.get("perturbed"):
        return "0 perturbed"
    return (
        f"{counts['perturbed']} perturbed: each real chunk's vector v copied "
        f"{copies.get('copies_per_real_chunk', '?')} times as normalize(v + sigma*g), g "
        f"standard Gaussian in 384 dimensions, sigma {copies.get('sigma', '?')} (mean cosine "
        f"to the original {copies.get('cosine_to_original_mean', '?')}, 5-95 % "
        f"{copies.get('cosine_to_original_p5_p95', '?')}; two copies of one original "
        f"{copies.get('cosine_between_two_copies_mean', '?')}); a copy's text is its "
        "original's, repeated, in a file of its own"
    )


# --- memory of an index build -----------------------------------------------------------


def _status_kb(pid: int) -> dict[str, int]:
    """VmRSS, RssAnon and RssShmem of a process, in kB (empty once it has exited)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    out = {}
    for line in lines:
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssShmem"):
            out[key] = int(value.split()[0])
    return out


def _dsm_rss_kb(pid: int) -> int:
    """Resident kB of the process's dynamic shared memory segments (the graph area)."""
    try:
        text = Path(f"/proc/{pid}/smaps").read_text()
    except OSError:
        return 0
    total, inside = 0, False
    for line in text.splitlines():
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            inside = bool(_DSM.search(line))
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


def _parallel_workers(leader: int) -> list[int]:
    """PIDs of the parallel workers of backend ``leader`` (their process titles say so)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if f"parallel worker for PID {leader}" in title:
            found.append(int(entry.name))
    return found


def _shm_used() -> int:
    try:
        return shutil.disk_usage("/dev/shm").used
    except OSError:
        return 0


class BuildMemory:
    """Peak memory of backend ``pid`` and its parallel workers while it builds an index,
    sampled every ``interval`` seconds on a thread (``with BuildMemory(pid) as m:``)."""

    def __init__(self, pid: int, interval: float = 0.5) -> None:
        self.pid, self.interval = pid, interval
        self.peaks: dict[str, int] = {}
        self.samples = 0
        self.workers: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._shm_before = _shm_used()

    def __enter__(self) -> BuildMemory:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def _peak(self, key: str, value: int) -> None:
        self.peaks[key] = max(self.peaks.get(key, 0), value)

    def sample(self) -> None:
        self.samples += 1
        leader = _status_kb(self.pid)
        for key, value in leader.items():
            self._peak(f"backend_{key}", value)
        workers = _parallel_workers(self.pid)
        self.workers.update(workers)
        statuses = [_status_kb(pid) for pid in workers]
        self._peak("workers_VmRSS", sum(s.get("VmRSS", 0) for s in statuses))
        graph = [_dsm_rss_kb(pid) for pid in [self.pid, *workers]]
        self._peak("graph_area_touched", max(graph))
        self._peak("dev_shm_growth", (_shm_used() - self._shm_before) // 1024)

    def figures(self) -> dict[str, Any]:
        """Peaks in MB (each the largest sample; the samples need not coincide)."""
        names = {
            "backend_VmRSS": "backend_rss_mb",
            "backend_RssAnon": "backend_rss_private_mb",
            "backend_RssShmem": "backend_rss_shared_mb",
            "workers_VmRSS": "parallel_workers_rss_mb",
            "graph_area_touched": "graph_area_touched_mb",
            "dev_shm_growth": "dev_shm_reserved_mb",
        }
        out: dict[str, Any] = {
            label: round(self.peaks.get(key, 0) / 1024, 1) for key, label in names.items()
        }
        out["samples"] = self.samples
        out["parallel_workers_seen"] = len(self.workers)
        out["note"] = (
            "peaks sampled from /proc every 0.5 s: the building backend's RSS (private and "
            "shared: shared_buffers pages it touched count too), its parallel workers' RSS, "
            "the pages of the shared graph area (one posix segment of maintenance_work_mem) "
            "touched by the leader or a worker, and how much /dev/shm grew (the segment is "
            "reserved whole, up front)"
        )
        return out


# --- sizes on disk ------------------------------------------------------------------------

_SIZES_SQL = """
SELECT pg_relation_size('documents_chunk'),
       coalesce((SELECT pg_total_relation_size(reltoastrelid) FROM pg_class
                 WHERE oid = 'documents_chunk'::regclass AND reltoastrelid <> 0), 0),
       pg_relation_size('chunk_embedding_hnsw_half'),
       pg_indexes_size('documents_chunk') - pg_relation_size('chunk_embedding_hnsw_half'),
       pg_relation_size('retrieval_lexicalposting'),
       pg_indexes_size('retrieval_lexicalposting'),
       pg_total_relation_size('documents_documentmarkdown'),
       pg_database_size(current_database())
"""
_SIZE_KEYS = (
    "chunk_heap", "chunk_toast", "hnsw_index", "chunk_other_indexes", "postings_heap",
    "postings_indexes", "markdown_with_toast", "database",
)  # fmt: skip


def storage_sizes(cursor: Any, chunks: int) -> dict[str, Any]:
    """Bytes of each part of the data set, and the same per million chunks in GB."""
    cursor.execute(_SIZES_SQL)
    sizes = dict(zip(_SIZE_KEYS, (int(v) for v in cursor.fetchone()), strict=True))
    cursor.execute(
        "SELECT avg(pg_column_size(embedding))::int, avg(pg_column_size(search_vector))::int,"
        " avg(pg_column_size(chunk_text))::int FROM documents_chunk TABLESAMPLE SYSTEM (1)"
    )
    names = ("embedding", "search_vector", "chunk_text")
    columns = dict(zip(names, cursor.fetchone(), strict=True))
    per_million = {k: round(v / chunks * 1e6 / 1024**3, 3) for k, v in sizes.items()}
    return {"bytes": sizes, "gb_per_million_chunks": per_million, "avg_column_bytes": columns}


def sizes_markdown(storage: dict[str, Any], chunks: int) -> list[str]:
    """A table of the sizes: total and per million chunks."""
    labels = {
        "chunk_heap": "chunk table (heap: text, tsvector, vector inline)",
        "chunk_toast": "chunk TOAST",
        "hnsw_index": "HNSW index (halfvec, m 16)",
        "chunk_other_indexes": "other chunk indexes (primary key, foreign keys, ...)",
        "postings_heap": "full-text postings (table)",
        "postings_indexes": "full-text postings indexes",
        "markdown_with_toast": "Markdown of the files",
        "database": "whole database",
    }
    lines = [
        f"| on disk ({chunks} chunks) | total | GB per million chunks |",
        "|---|---:|---:|",
    ]
    for key, label in labels.items():
        total = storage["bytes"][key]
        lines.append(f"| {label} | {_pretty(total)} | {storage['gb_per_million_chunks'][key]} |")
    return lines


def _pretty(size: int) -> str:
    for unit, scale in (("GB", 1024**3), ("MB", MB)):
        if size >= scale:
            return f"{size / scale:.2f} {unit}"
    return f"{size / 1024:.0f} kB"
