"""The documents' embedding path is measured once per host and remembered: the
first path in the order of preference within the margin of the fastest."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from retrieval.embedders import MiniLmEmbedder, precision_from_env
from retrieval.runtime_choice import (
    BF16_OPENVINO,
    FP32_ONNXRUNTIME,
    FP32_OPENVINO,
    FP32_TORCH,
    PREFERENCE,
    Candidate,
    candidates,
    choice_file,
    choose,
    remembered_choice,
)


@pytest.mark.parametrize(
    ("rates", "chosen"),
    [
        # a Xeon exposing avx512_bf16 without AMX (bench/results/latest.md)
        ({BF16_OPENVINO: 30.8, FP32_ONNXRUNTIME: 41.1, FP32_TORCH: 44.9}, FP32_ONNXRUNTIME),
        # an AMD EPYC with avx512_bf16
        ({BF16_OPENVINO: 147.6, FP32_ONNXRUNTIME: 60.0, FP32_TORCH: 37.4}, BF16_OPENVINO),
        ({BF16_OPENVINO: 100.0, FP32_ONNXRUNTIME: 105.0}, BF16_OPENVINO),  # within 10 %
        ({FP32_ONNXRUNTIME: 30.0, FP32_TORCH: 40.0}, FP32_TORCH),  # well past it
        ({FP32_TORCH: 12.0}, FP32_TORCH),
        # an AVX2-only AMD EPYC, one thread (bench/results/latest.md, session 25)
        ({FP32_ONNXRUNTIME: 12.9, FP32_OPENVINO: 14.7, FP32_TORCH: 12.3}, FP32_OPENVINO),
        # ONNX Runtime within the margin keeps its batch-exact sentence vectors
        ({FP32_ONNXRUNTIME: 20.2, FP32_OPENVINO: 21.0, FP32_TORCH: 19.9}, FP32_ONNXRUNTIME),
        ({BF16_OPENVINO: 184.6, FP32_ONNXRUNTIME: 47.5, FP32_OPENVINO: 50.0}, BF16_OPENVINO),
    ],
)
def test_the_first_preferred_path_within_the_margin_is_chosen(
    rates: dict[Candidate, float], chosen: Candidate
) -> None:
    assert choose(rates) == chosen


def test_bf16_is_measured_only_where_the_cpu_has_it() -> None:
    assert list(candidates(native_bf16=False)) == [FP32_ONNXRUNTIME, FP32_OPENVINO, FP32_TORCH]
    assert list(candidates(native_bf16=True)) == list(PREFERENCE)
    assert BF16_OPENVINO in PREFERENCE


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PREFERENCE", (BF16_OPENVINO, FP32_ONNXRUNTIME, FP32_TORCH)),  # a new path
        ("SAMPLE_WORDS", 95),  # a new sample: half as long
        ("_WORDS", "other words " * 20),
        ("MEASUREMENT", 1),  # measured another way: torch in bf16 on a bf16 CPU
    ],
)
def test_a_new_candidate_or_sample_measures_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, value: object
) -> None:
    """A choice remembered before a path existed, or measured on other texts or in
    another way, may not be the fastest any more: all are part of the file's key."""
    import retrieval.runtime_choice as runtime_choice

    remembered_choice(tmp_path, lambda: {FP32_ONNXRUNTIME: 10.0, FP32_TORCH: 9.0})
    older = choice_file(tmp_path)
    monkeypatch.setattr(runtime_choice, name, value)
    assert choice_file(tmp_path) != older
    assert remembered_choice(tmp_path, lambda: {FP32_TORCH: 10.0}).path == FP32_TORCH


def test_nothing_measured_is_an_error() -> None:
    with pytest.raises(ValueError, match="no candidate"):
        choose({})


def test_the_choice_is_measured_once_and_read_afterwards(tmp_path: Path) -> None:
    measured: list[int] = []

    def measure() -> dict[Candidate, float]:
        measured.append(1)
        return {BF16_OPENVINO: 20.0, FP32_ONNXRUNTIME: 40.0}

    first = remembered_choice(tmp_path, measure)
    again = remembered_choice(tmp_path, measure)
    assert measured == [1]
    assert first == again and first.path == FP32_ONNXRUNTIME
    stored = json.loads(choice_file(tmp_path).read_text())
    assert stored["texts_per_s"] == {"bf16 openvino": 20.0, "fp32 onnxruntime": 40.0}
    assert "CPUs" in stored["host"] and stored["runtime"] == "onnxruntime"


@pytest.mark.parametrize(
    "content", ["{not json", '{"precision": "fp16", "runtime": "cuda"}', '["a list"]', ""]
)
def test_an_unreadable_or_unknown_choice_is_measured_again(tmp_path: Path, content: str) -> None:
    choice_file(tmp_path).write_text(content)
    choice = remembered_choice(tmp_path, lambda: {FP32_TORCH: 10.0})
    assert choice.path == FP32_TORCH
    assert json.loads(choice_file(tmp_path).read_text())["runtime"] == "torch"


def test_processes_starting_together_measure_once(tmp_path: Path) -> None:
    """The file lock: the others wait for the first one's file and read it."""
    measured: list[int] = []
    release = threading.Event()

    def slow_measure() -> dict[Candidate, float]:
        measured.append(1)
        release.wait(5)
        return {FP32_ONNXRUNTIME: 10.0}

    results = []
    threads = [
        threading.Thread(target=lambda: results.append(remembered_choice(tmp_path, slow_measure)))
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    release.set()
    for thread in threads:
        thread.join(30)
    assert measured == [1] and len(results) == 3
    assert {r.path for r in results} == {FP32_ONNXRUNTIME}


def test_the_default_embedder_runs_the_path_it_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROVENANCE_MODEL_CACHE", str(tmp_path))
    monkeypatch.delenv("PROVENANCE_EMBED_PRECISION", raising=False)
    monkeypatch.delenv("PROVENANCE_EMBED_RUNTIME", raising=False)
    embedder = MiniLmEmbedder(batch_size=16)
    stored = json.loads(choice_file(tmp_path).read_text())
    rates = {Candidate(*name.split()): rate for name, rate in stored["texts_per_s"].items()}
    assert {FP32_ONNXRUNTIME, FP32_OPENVINO, FP32_TORCH} <= set(rates)
    assert min(rates.values()) > 0
    assert choose(rates) == Candidate(embedder.precision, embedder.documents_runtime)
    vector = embedder.embed_documents(["Invoices are kept for seven years."])[0]
    assert abs(sum(x * x for x in vector) - 1.0) < 1e-4
    # torch was measured as the candidate is named, in fp32, even where the documents'
    # precision was bf16 while it was measured
    measured = embedder._model
    assert measured is not None
    assert measured[0] == "fp32"
    assert {p.dtype for p in measured[1].parameters()} == {torch.float32}
    # asking for a precision or for torch skips the measurement
    asked = MiniLmEmbedder(batch_size=16, precision="fp32")
    assert asked.choice is None and asked.documents_runtime == "onnxruntime"


def test_torchs_model_is_the_precision_asked_for() -> None:
    """A torch model loaded in one precision never embeds for another: the documents'
    path in bf16 reloads it after an fp32 measurement, and the other way round."""
    texts = ["Invoices are kept for seven years.", "Travel by train is preferred."]
    bf16 = MiniLmEmbedder(batch_size=16, precision="bf16", runtime="torch")
    assert {p.dtype for p in bf16.model.parameters()} == {torch.bfloat16}
    fp32 = MiniLmEmbedder(batch_size=16, precision="fp32", runtime="torch")
    reference = fp32._torch_documents(texts)
    assert {p.dtype for p in fp32.model.parameters()} == {torch.float32}
    measured = bf16._torch_documents(texts, precision="fp32")
    assert np.array_equal(measured, reference)
    assert {p.dtype for p in bf16.model.parameters()} == {torch.bfloat16}
    assert not np.array_equal(bf16._torch_documents(texts), reference)


def test_a_misspelt_precision_fails_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVENANCE_EMBED_PRECISION", "fast")
    with pytest.raises(ValueError, match="auto"):
        precision_from_env()
    monkeypatch.setenv("PROVENANCE_EMBED_PRECISION", " AUTO ")
    assert precision_from_env() == "auto"


def test_a_cache_that_cannot_be_written_still_gives_a_choice(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file-not-a-folder"
    blocked.write_text("")
    choice = remembered_choice(blocked, lambda: {FP32_ONNXRUNTIME: 10.0, FP32_TORCH: 30.0})
    assert choice.path == FP32_TORCH


def test_paths_are_measured_on_texts_of_a_chunks_length() -> None:
    """The gap between paths depends on the texts' length: the sample is as long
    as the chunker's default target."""
    from retrieval.runtime_choice import sample_texts

    embedder = MiniLmEmbedder(precision="fp32", runtime="onnxruntime", threads=1)
    texts = sample_texts()
    lengths = [len(ids) for ids in embedder.model.tokenizer(texts)["input_ids"]]
    assert len(set(texts)) == len(texts) > 1
    target = 200  # PROVENANCE_CHUNK_TARGET_TOKENS' default (settings/base.py)
    assert all(0.9 * target <= length <= 1.1 * target for length in lengths), lengths


def test_the_choice_follows_the_figures_it_keeps(tmp_path: Path) -> None:
    """11.04 is past the margin of 10.0 (11.0), its kept figure 11.0 is not: the
    kept file must explain the choice."""
    choice = remembered_choice(tmp_path, lambda: {FP32_ONNXRUNTIME: 10.0, FP32_OPENVINO: 11.04})
    rates = {Candidate(*name.split()): rate for name, rate in choice.texts_per_s.items()}
    assert choose(rates) == choice.path == FP32_ONNXRUNTIME
