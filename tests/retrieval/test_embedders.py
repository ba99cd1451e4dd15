"""The embedders against the real model and a real HTTP server (no mocks).

Plain pytest: ``.venv/bin/python -m pytest -p no:django tests/retrieval/test_embedders.py``.
"""

from __future__ import annotations

import json
import random
import threading
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from retrieval.cpu import has_native_bf16
from retrieval.embedders import (
    EMBED_DIMENSIONS,
    PAD_TO_MULTIPLE,
    EmbeddingServiceError,
    MiniLmEmbedder,
    OpenAiCompatibleEmbedder,
)
from tests.support.corpus import CORPUS


@pytest.fixture(scope="module", autouse=True)
def _runtime_chosen_by_the_embedder() -> Iterator[None]:
    """These tests name the precision and expect the runtime to follow from it: a
    runtime forced in the caller's environment (``PROVENANCE_EMBED_RUNTIME``) would
    pair bf16 with ONNX Runtime, which refuses it. Module-scoped: the embedders
    below are."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("PROVENANCE_EMBED_RUNTIME", raising=False)
        yield


SQUAD = CORPUS / "qa" / "squad-v1.1-dev-subset6.json"


@pytest.fixture(scope="module")
def fp32() -> MiniLmEmbedder:
    """The reference: the model in fp32 through torch."""
    return MiniLmEmbedder(batch_size=16, precision="fp32", runtime="torch")


@pytest.fixture(scope="module")
def onnx_fp32() -> MiniLmEmbedder:
    """fp32 documents through the ONNX export on ONNX Runtime (CPUs without native bf16)."""
    return MiniLmEmbedder(batch_size=16, precision="fp32")


@pytest.fixture(scope="module")
def fast() -> MiniLmEmbedder:
    """The default precision, ``auto``: the path measured fastest on this host."""
    return MiniLmEmbedder(batch_size=16, precision="auto")


@pytest.fixture(scope="module")
def paragraphs() -> list[str]:
    data = json.loads(SQUAD.read_text(encoding="utf-8"))
    return [p["context"] for article in data["data"] for p in article["paragraphs"][:2]]


def _cos(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    return float(np.dot(a, b))


def test_vectors_are_384d_unit_length(fp32: MiniLmEmbedder, fast: MiniLmEmbedder) -> None:
    for embedder in (fp32, fast):
        vectors = embedder.embed_documents(["The cat sat on the mat.", "Quarterly revenue rose."])
        assert embedder.dimensions == EMBED_DIMENSIONS == 384
        assert [len(v) for v in vectors] == [384, 384]
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_same_input_same_vector(fast: MiniLmEmbedder) -> None:
    text = "Invoices are due within thirty days of receipt."
    first, second = fast.embed_documents([text]), fast.embed_documents([text])
    assert np.allclose(first, second, atol=1e-6)


def test_close_sentence_scores_higher_than_unrelated(
    fp32: MiniLmEmbedder, fast: MiniLmEmbedder
) -> None:
    for embedder in (fp32, fast):
        anchor, close, unrelated = embedder.embed_documents(
            [
                "The invoice must be paid within 30 days.",
                "Payment of the bill is due in one month.",
                "Penguins live mostly in the Southern Hemisphere.",
            ]
        )
        assert _cos(anchor, close) > _cos(anchor, unrelated) + 0.2


def test_query_path_is_the_fp32_model_through_onnx_runtime(
    fp32: MiniLmEmbedder, fast: MiniLmEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Questions run the same weights exported to ONNX: equal to torch fp32, close to bf16."""
    monkeypatch.setenv("PROVENANCE_MODEL_CACHE", str(tmp_path))
    embedder = MiniLmEmbedder(batch_size=16, precision="fp32")  # a fresh one: exports here
    questions = ["Who won Super Bowl 50?", "Which NFL team represented the AFC?", "x " * 400]
    vectors = [embedder.embed_query(q) for q in questions]
    assert [p.suffix for p in tmp_path.iterdir()] == [".onnx"]  # exported once, no leftovers
    # each of the six layers' attention is one fused node, as are its norms and GELU
    graph = onnx.load(next(tmp_path.iterdir())).graph
    ops = Counter(node.op_type for node in graph.node)
    assert ops["Attention"] == 6 and ops["SkipLayerNormalization"] == 12 and ops["BiasGelu"] == 6
    assert len(graph.node) < 80, ops
    for question, vector in zip(questions, vectors, strict=True):
        assert len(vector) == 384 and abs(np.linalg.norm(vector) - 1.0) < 1e-5
        assert _cos(vector, fp32.embed_documents([question])[0]) > 0.99999
        assert _cos(vector, fast.embed_documents([question])[0]) > 0.999
    # a second embedder in the same cache reuses the file instead of exporting again
    stamp = next(tmp_path.iterdir()).stat().st_mtime_ns
    again = MiniLmEmbedder(batch_size=16, precision="fp32").embed_query(questions[0])
    assert again == pytest.approx(vectors[0])
    assert next(tmp_path.iterdir()).stat().st_mtime_ns == stamp


def test_bf16_documents_get_bf16_questions_from_openvino(
    fp32: MiniLmEmbedder, fast: MiniLmEmbedder
) -> None:
    """Where documents are bf16, questions run the same graph with bf16 matrix products
    on OpenVINO (ONNX Runtime has no bf16 kernels on x86); elsewhere fp32 ONNX Runtime."""
    from retrieval.onnx_query import OnnxQueryEncoder, OpenVinoQueryEncoder

    questions = ["Who won Super Bowl 50?", "Which NFL team represented the AFC?", "x " * 400]
    vectors = [fast.embed_query(q) for q in questions]
    encoder = fast._query_encoder
    if fast.precision == "bf16":
        assert isinstance(encoder, OpenVinoQueryEncoder)
        assert (encoder.runtime, encoder.precision) == ("openvino", "bf16")
        assert encoder.compiled.get_property("ENABLE_CPU_PINNING") is False
    else:
        assert isinstance(encoder, OnnxQueryEncoder)
    fp32.embed_query(questions[0])
    assert isinstance(fp32._query_encoder, OnnxQueryEncoder)  # fp32 documents: fp32 questions
    for question, vector in zip(questions, vectors, strict=True):
        assert len(vector) == 384 and abs(np.linalg.norm(vector) - 1.0) < 1e-5
        reference = fp32.embed_documents([question])[0]
        # as close to fp32 as a bf16 document vector is
        assert _cos(vector, reference) > 0.9995
        assert _cos(vector, fast.embed_documents([question])[0]) > 0.999
        if fast.precision == "bf16":
            assert _cos(vector, reference) < 0.9999999  # really bf16, not fp32 again


def test_candidate_sentences_are_embedded_as_questions_are(
    fp32: MiniLmEmbedder, fast: MiniLmEmbedder, paragraphs: list[str]
) -> None:
    """The generator compares sentences with the question: they run through the
    question's encoder in batches, padded and masked, so each vector is the one the
    sentence gets alone, and close to its documents-path vector."""
    sentences = [s.strip() + "." for p in paragraphs[:8] for s in p.split(".")[:3] if s.strip()]
    sentences += ["Short.", "x " * 400]  # one word and a text past 256 tokens in one batch
    assert len(sentences) > 16  # more than one batch
    for embedder in (fp32, fast):
        batched = embedder.embed_sentences(sentences)
        assert len(batched) == len(sentences)
        for sentence, vector in zip(sentences, batched, strict=True):
            assert _cos(vector, embedder.embed_query(sentence)) > 0.99999, sentence
            assert abs(np.linalg.norm(vector) - 1.0) < 1e-5
        documents = embedder.embed_documents(sentences[:5])
        for vector, reference in zip(batched[:5], documents, strict=True):
            assert _cos(vector, reference) > 0.999
    assert fast.embed_sentences([]) == []


def test_openvino_encoder_serves_threads_with_their_own_requests(fast: MiniLmEmbedder) -> None:
    """A threaded web server asks from several threads at once: every answer is the
    one the question gets alone."""
    from concurrent.futures import ThreadPoolExecutor

    questions = [f"What is clause {n} of the supply contract about?" for n in range(24)]
    alone = [fast.embed_query(q) for q in questions]
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(fast.embed_query, questions))
    assert together == alone


def test_query_encoder_falls_back_to_onnx_runtime_when_openvino_cannot_serve(
    fp32: MiniLmEmbedder, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A broken or missing OpenVINO costs speed, never the search: fp32 questions."""
    import openvino

    from retrieval.onnx_query import OnnxQueryEncoder, OpenVinoQueryEncoder, query_encoder

    question = "Which NFL team represented the AFC at Super Bowl 50?"

    class BrokenCore:
        def __init__(self) -> None:
            raise RuntimeError("Cannot load library libopenvino_intel_cpu_plugin.so")

    monkeypatch.setattr(openvino, "Core", BrokenCore)
    with caplog.at_level("WARNING", logger="retrieval.onnx_query"):
        encoder = query_encoder(fp32.model_dir, fp32.model.tokenizer, "bf16")
    assert isinstance(encoder, OnnxQueryEncoder) and encoder.precision == "fp32"
    assert "OpenVINO bf16 unavailable" in caplog.text
    assert _cos(encoder.encode(question), fp32.embed_documents([question])[0]) > 0.99999
    monkeypatch.undo()
    if has_native_bf16():  # a graph that compiles but cannot run falls back too

        def failing_infer(self: Any, *args: Any, **kwargs: Any) -> None:
            raise RuntimeError("Exception from src/inference/src/cpp/infer_request.cpp")

        monkeypatch.setattr(openvino.InferRequest, "infer", failing_infer)
        encoder = query_encoder(fp32.model_dir, fp32.model.tokenizer, "bf16")
        assert isinstance(encoder, OnnxQueryEncoder)
        monkeypatch.undo()
    else:  # the plugin itself refuses where bf16 would be emulated
        with pytest.raises(RuntimeError, match="no native bf16"):
            OpenVinoQueryEncoder(encoder.onnx_file, fp32.model.tokenizer)


def test_query_encoder_falls_back_to_the_unfused_graph_and_fuses_on_the_next_start(
    fp32: MiniLmEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ONNX Runtime's optimizer failing (a full temp disk, a changed graph) costs speed,
    never the search; the unfused file is not kept under the fused name."""
    import onnxruntime.transformers.optimizer as optimizer

    from retrieval.onnx_query import export_path, query_encoder

    monkeypatch.setenv("PROVENANCE_MODEL_CACHE", str(tmp_path))
    question = "Which NFL team represented the AFC at Super Bowl 50?"
    expected = fp32.embed_documents([question])[0]

    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError("No space left on device")

    monkeypatch.setattr(optimizer, "optimize_model", broken)
    unfused = query_encoder(fp32.model_dir, fp32.model.tokenizer)
    assert unfused.onnx_file.name.endswith("-unfused.onnx")
    assert not export_path(fp32.model_dir).exists()
    assert _cos(unfused.encode(question), expected) > 0.99999
    assert Counter(n.op_type for n in onnx.load(unfused.onnx_file).graph.node)["Attention"] == 0

    monkeypatch.undo()
    monkeypatch.setenv("PROVENANCE_MODEL_CACHE", str(tmp_path))
    fused = query_encoder(fp32.model_dir, fp32.model.tokenizer)
    assert fused.onnx_file == export_path(fp32.model_dir)
    assert [p.name for p in tmp_path.iterdir()] == [fused.onnx_file.name]  # the old one pruned
    assert _cos(fused.encode(question), expected) > 0.99999


def test_query_threads_come_from_the_environment_and_change_nothing_but_speed(
    fp32: MiniLmEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.core.exceptions import ImproperlyConfigured

    from retrieval.onnx_query import OnnxQueryEncoder, OpenVinoQueryEncoder, query_encoder

    encoders = {}
    for threads in ("1", "2"):
        monkeypatch.setenv("PROVENANCE_QUERY_THREADS", threads)
        encoder = query_encoder(fp32.model_dir, fp32.model.tokenizer)
        assert isinstance(encoder, OnnxQueryEncoder)
        assert encoder.session.get_session_options().intra_op_num_threads == int(threads)
        encoders[threads] = encoder
    monkeypatch.delenv("PROVENANCE_QUERY_THREADS")
    default = query_encoder(fp32.model_dir, fp32.model.tokenizer)
    assert isinstance(default, OnnxQueryEncoder)
    assert default.session.get_session_options().intra_op_num_threads == 2
    # idle threads sleep instead of spinning: Postgres needs the cores meanwhile
    options = default.session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    question = "Which NFL team represented the AFC at Super Bowl 50?"
    assert _cos(encoders["1"].encode(question), encoders["2"].encode(question)) > 0.999999
    for bad in ("0", "-1", "two"):
        monkeypatch.setenv("PROVENANCE_QUERY_THREADS", bad)
        with pytest.raises(ImproperlyConfigured, match="PROVENANCE_QUERY_THREADS"):
            query_encoder(fp32.model_dir, fp32.model.tokenizer)
    if has_native_bf16():  # the bf16 encoder takes the same setting
        monkeypatch.setenv("PROVENANCE_QUERY_THREADS", "1")
        bf16 = query_encoder(fp32.model_dir, fp32.model.tokenizer, "bf16")
        assert isinstance(bf16, OpenVinoQueryEncoder)
        assert bf16.compiled.get_property("INFERENCE_NUM_THREADS") == 1


def test_torch_threads_setting_is_read_strictly(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.core.exceptions import ImproperlyConfigured

    from retrieval.embedders import threads_from_env

    monkeypatch.delenv("PROVENANCE_TORCH_THREADS", raising=False)
    assert threads_from_env() == 1
    monkeypatch.setenv("PROVENANCE_TORCH_THREADS", "0")
    assert threads_from_env() is None  # torch's own default
    monkeypatch.setenv("PROVENANCE_TORCH_THREADS", "3")
    assert threads_from_env() == 3
    for bad in ("-1", "two"):
        monkeypatch.setenv("PROVENANCE_TORCH_THREADS", bad)
        with pytest.raises(ImproperlyConfigured, match="PROVENANCE_TORCH_THREADS"):
            threads_from_env()


def test_questions_rank_bf16_documents_as_fp32_questions_do(
    fp32: MiniLmEmbedder, fast: MiniLmEmbedder, paragraphs: list[str]
) -> None:
    """The mixed pair (fp32 ONNX question, bf16 documents) ranks like fp32 throughout."""
    data = json.loads(SQUAD.read_text(encoding="utf-8"))
    questions = [p["qas"][0]["question"] for a in data["data"] for p in a["paragraphs"][:2]]
    reference_docs = np.asarray(fp32.embed_documents(paragraphs))
    fast_docs = np.asarray(fast.embed_documents(paragraphs))
    overlaps = []
    for question in questions:
        reference = np.argsort(-reference_docs @ np.asarray(fp32.embed_documents([question])[0]))
        mixed = np.argsort(-fast_docs @ np.asarray(fast.embed_query(question)))
        overlaps.append(len(set(reference[:10]) & set(mixed[:10])) / 10)
    assert np.mean(overlaps) >= 0.98, np.mean(overlaps)


def test_empty_input_gives_no_vectors(fast: MiniLmEmbedder) -> None:
    assert fast.embed_documents([]) == []


def test_fast_precision_agrees_with_fp32(
    fp32: MiniLmEmbedder, fast: MiniLmEmbedder, paragraphs: list[str]
) -> None:
    assert fast.choice is not None  # the default measures which path is fastest here
    assert fast.precision == fast.choice.precision
    assert fast.documents_runtime == fast.choice.runtime
    reference = fp32.embed_documents(paragraphs)
    candidate = fast.embed_documents(paragraphs)
    cosines = [_cos(a, b) for a, b in zip(reference, candidate, strict=True)]
    assert min(cosines) >= 0.99, cosines


def test_bf16_documents_run_through_openvino_in_input_order(
    fp32: MiniLmEmbedder, paragraphs: list[str]
) -> None:
    """In bf16 the chunks go through the exported graph on OpenVINO (faster than
    torch's bf16), in runs of similar length: each vector is still its own text's,
    in the order given, and as close to fp32 as bf16 allows."""
    from retrieval.onnx_query import OpenVinoQueryEncoder

    fast = MiniLmEmbedder(batch_size=16, precision="bf16")  # asked for, not measured
    if not has_native_bf16():
        assert fast.precision == "fp32" and fast.documents_runtime == "onnxruntime"
        return
    assert fast.documents_runtime == "openvino" and fp32.documents_runtime == "torch"
    encoder = fast._documents()
    assert isinstance(encoder, OpenVinoQueryEncoder)
    assert encoder.compiled.get_property("INFERENCE_NUM_THREADS") == 1  # one per process
    texts = [*paragraphs[:20], "Short.", "x " * 400]
    mixed = [*reversed(texts)]
    vectors, reordered = fast.embed_documents(texts), fast.embed_documents(mixed)
    reference = fp32.embed_documents(texts)
    for text, vector, again, exact in zip(
        texts, vectors, reversed(reordered), reference, strict=True
    ):
        assert abs(np.linalg.norm(vector) - 1.0) < 1e-5
        assert _cos(vector, again) > 0.99999, text
        assert _cos(vector, fast.embed_documents([text])[0]) > 0.99999, text
        assert 0.9995 < _cos(vector, exact) < 0.9999999, text  # bf16, not fp32 again


def test_document_threads_can_change_and_reach_openvino(paragraphs: list[str]) -> None:
    """The embed bench runs one process on both cores: OpenVINO's thread count is
    fixed when it compiles, so setting it compiles the encoder again."""
    embedder = MiniLmEmbedder(batch_size=16, threads=1)
    before = embedder.embed_documents(paragraphs[:3])
    embedder.threads_set(2)
    after = embedder.embed_documents(paragraphs[:3])
    assert min(_cos(a, b) for a, b in zip(before, after, strict=True)) > 0.99999
    if embedder.documents_runtime == "openvino":
        assert embedder._documents().compiled.get_property("INFERENCE_NUM_THREADS") == 2
    import torch

    assert embedder.model is not None  # torch's model, loaded after the change, takes it
    assert torch.get_num_threads() == 2
    embedder.threads_set(1)
    assert torch.get_num_threads() == 1  # and a change after it loaded reaches torch


def test_documents_fall_back_to_torch_when_openvino_cannot_serve(
    fp32: MiniLmEmbedder,
    paragraphs: list[str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import openvino

    class BrokenCore:
        def __init__(self) -> None:
            raise RuntimeError("Cannot load library libopenvino_intel_cpu_plugin.so")

    monkeypatch.setattr(openvino, "Core", BrokenCore)
    embedder = MiniLmEmbedder(batch_size=16, precision="bf16")
    with caplog.at_level("WARNING", logger="retrieval.embedders"):
        vectors = embedder.embed_documents(paragraphs[:4])
        expected = "torch" if embedder.precision == "bf16" else "onnxruntime"
        assert embedder.documents_runtime == expected
    if embedder.precision == "bf16":
        assert caplog.text.count("OpenVINO bf16 unavailable: torch bf16") == 1  # tried once
    reference = fp32.embed_documents(paragraphs[:4])
    assert min(_cos(a, b) for a, b in zip(vectors, reference, strict=True)) > 0.999


def test_batches_are_padded_to_aligned_lengths_without_changing_vectors(
    fp32: MiniLmEmbedder, paragraphs: list[str]
) -> None:
    """Lengths padded to a multiple of PAD_TO_MULTIPLE (faster kernels) give the
    vectors an unpadded batch gives: mean pooling skips the padding."""
    texts = paragraphs[:8]
    # torch types a module's attributes as Tensor | Module: this one is a method
    features = fp32.model[0].preprocess(texts)  # type: ignore[operator]
    assert features["input_ids"].shape[1] % PAD_TO_MULTIPLE == 0
    padded = fp32.embed_documents(texts)
    # one text at a time, each padded only to its own multiple: the same vectors
    alone = [fp32.embed_documents([text])[0] for text in texts]
    assert min(_cos(a, b) for a, b in zip(padded, alone, strict=True)) >= 0.99999


def _assert_torchs_fp32_vectors_in_input_order(
    embedder: MiniLmEmbedder, fp32: MiniLmEmbedder, paragraphs: list[str]
) -> None:
    """Each vector is its own text's, in input order (runs of similar length put
    them out of order inside), and torch's fp32 vector to within float rounding."""
    texts = [*paragraphs[:20], "Short.", "x " * 400]
    vectors = embedder.embed_documents(texts)
    reordered = embedder.embed_documents([*reversed(texts)])
    reference = fp32.embed_documents(texts)
    for text, vector, again, exact in zip(
        texts, vectors, reversed(reordered), reference, strict=True
    ):
        assert abs(np.linalg.norm(vector) - 1.0) < 1e-5
        assert _cos(vector, again) > 0.99999, text
        assert _cos(vector, exact) > 0.99999, text


def test_fp32_documents_run_through_onnx_runtime_with_torchs_vectors(
    fp32: MiniLmEmbedder, onnx_fp32: MiniLmEmbedder, paragraphs: list[str]
) -> None:
    """Without native bf16 the chunks go through the ONNX export on ONNX Runtime in
    fp32, in runs of similar length: each vector is its own text's, in input order,
    and torch's fp32 vector to within float rounding."""
    from retrieval.onnx_query import OnnxQueryEncoder

    assert onnx_fp32.documents_runtime == "onnxruntime" and fp32.documents_runtime == "torch"
    encoder = onnx_fp32._documents()
    assert isinstance(encoder, OnnxQueryEncoder)
    assert encoder.session.get_session_options().intra_op_num_threads == 1  # one per process
    _assert_torchs_fp32_vectors_in_input_order(onnx_fp32, fp32, paragraphs)


def test_fp32_documents_can_run_through_openvino_with_torchs_vectors(
    fp32: MiniLmEmbedder, paragraphs: list[str]
) -> None:
    """fp32 on OpenVINO (the measured choice on an AVX2-only AMD EPYC): the export
    compiled without a bf16 hint, each vector its own text's in input order and
    torch's fp32 vector to within float rounding; questions stay on ONNX Runtime
    in fp32, whose sentence vectors are bit-exact across batches."""
    from retrieval.onnx_query import OnnxQueryEncoder, OpenVinoQueryEncoder

    embedder = MiniLmEmbedder(batch_size=16, precision="fp32", runtime="openvino", threads=1)
    assert embedder.precision == "fp32" and embedder.documents_runtime == "openvino"
    encoder = embedder._documents()
    assert isinstance(encoder, OpenVinoQueryEncoder) and encoder.precision == "fp32"
    assert "float32" in str(encoder.compiled.get_property("INFERENCE_PRECISION_HINT"))
    assert encoder.compiled.get_property("INFERENCE_NUM_THREADS") == 1
    _assert_torchs_fp32_vectors_in_input_order(embedder, fp32, paragraphs)
    asked = embedder._questions()
    assert isinstance(asked, OnnxQueryEncoder) and asked.kept_sentences is not None


def test_bf16_cannot_be_asked_of_onnx_runtime() -> None:
    """ONNX Runtime runs the export in fp32 only: ``auto`` resolves to fp32 there,
    and bf16 asked for on a CPU that has it is refused before the model loads."""
    assert MiniLmEmbedder(precision="auto", runtime="onnxruntime").precision == "fp32"
    if has_native_bf16():
        with pytest.raises(ValueError, match="fp32"):
            MiniLmEmbedder(precision="bf16", runtime="onnxruntime")
    else:  # bf16 without native support is fp32 already
        assert MiniLmEmbedder(precision="bf16", runtime="onnxruntime").precision == "fp32"


def test_onnx_fp32_documents_rank_as_torch_fp32_documents(
    fp32: MiniLmEmbedder, onnx_fp32: MiniLmEmbedder, paragraphs: list[str]
) -> None:
    """The top 10 of every SQuAD question over the paragraphs, with documents and
    questions embedded either way, are the same set."""
    data = json.loads(SQUAD.read_text(encoding="utf-8"))
    questions = [
        qa["question"]
        for article in data["data"]
        for paragraph in article["paragraphs"][:2]
        for qa in paragraph["qas"][:2]
    ]
    assert questions
    reference_docs = np.asarray(fp32.embed_documents(paragraphs))
    onnx_docs = np.asarray(onnx_fp32.embed_documents(paragraphs))
    for question in questions:
        vector = np.asarray(fp32.embed_documents([question])[0])
        reference = set(np.argsort(-reference_docs @ vector)[:10])
        assert set(np.argsort(-onnx_docs @ np.asarray(onnx_fp32.embed_query(question)))[:10]) == (
            reference
        ), question


def test_documents_fall_back_to_torch_when_onnx_runtime_cannot_serve(
    fp32: MiniLmEmbedder,
    paragraphs: list[str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import onnxruntime

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("onnxruntime: cannot create a session here")

    monkeypatch.setattr(onnxruntime, "InferenceSession", broken)
    embedder = MiniLmEmbedder(batch_size=16, precision="fp32")
    with caplog.at_level("WARNING", logger="retrieval.embedders"):
        vectors = embedder.embed_documents(paragraphs[:4])
        assert embedder.documents_runtime == "torch"
    assert caplog.text.count("ONNX Runtime fp32 unavailable: torch fp32") == 1
    reference = fp32.embed_documents(paragraphs[:4])
    assert min(_cos(a, b) for a, b in zip(vectors, reference, strict=True)) > 0.99999


def test_runtime_is_read_strictly(monkeypatch: pytest.MonkeyPatch) -> None:
    from retrieval.embedders import runtime_from_env

    monkeypatch.setenv("PROVENANCE_EMBED_RUNTIME", "Torch ")
    assert runtime_from_env() == "torch"
    monkeypatch.setenv("PROVENANCE_EMBED_RUNTIME", "OpenVINO")
    assert runtime_from_env() == "openvino"
    monkeypatch.setenv("PROVENANCE_EMBED_RUNTIME", "tensorflow")
    with pytest.raises(ValueError, match="PROVENANCE_EMBED_RUNTIME"):
        runtime_from_env()
    with pytest.raises(ValueError, match="runtime"):
        MiniLmEmbedder(runtime="jax")


def test_unknown_precision_is_refused() -> None:
    with pytest.raises(ValueError, match="precision"):
        MiniLmEmbedder(precision="int8")


# --- OpenAI-compatible service --------------------------------------------------------


class _Service:
    """What the fake service saw and how it should answer."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.dimensions = 384
        self.status = 200


def _vector_for(text: str, dimensions: int) -> list[float]:
    """A deterministic, non-normalised vector per text (so order mistakes show)."""
    rng = np.random.default_rng(zlib.crc32(text.encode()))
    return (rng.normal(size=dimensions) * 3).tolist()


def _handler(service: _Service) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # http.server's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            service.requests.append(
                {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
            )
            if service.status != 200 or self.headers.get("Authorization") != "Bearer sk-test":
                self._reply(
                    401,
                    {
                        "error": {
                            "message": "Incorrect API key provided",
                            "type": "invalid_request_error",
                        }
                    },
                )
                return
            data = [
                {
                    "object": "embedding",
                    "index": i,
                    "embedding": _vector_for(text, service.dimensions),
                }
                for i, text in enumerate(body["input"])
            ]
            random.Random(len(data)).shuffle(data)
            self._reply(
                200,
                {
                    "object": "list",
                    "data": data,
                    "model": body["model"],
                    "usage": {"prompt_tokens": 7, "total_tokens": 7},
                },
            )

        def _reply(self, status: int, payload: dict[str, Any]) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *_: object) -> None:
            pass

    return Handler


@pytest.fixture()
def service() -> Iterator[tuple[_Service, str]]:
    state = _Service()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state, f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_service_vectors_come_back_in_input_order(service: tuple[_Service, str]) -> None:
    state, url = service
    embedder = OpenAiCompatibleEmbedder(url, "sk-test", "minilm", 384, batch_size=4)
    texts = [f"chunk number {i}" for i in range(10)]
    vectors = embedder.embed_documents(texts)
    for text, vector in zip(texts, vectors, strict=True):
        expected = np.asarray(_vector_for(text, 384))
        assert np.allclose(vector, expected / np.linalg.norm(expected), atol=1e-6)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert [len(r["body"]["input"]) for r in state.requests] == [4, 4, 2]
    assert state.requests[0]["path"] == "/v1/embeddings"
    assert state.requests[0]["body"]["model"] == "minilm"
    assert embedder.embed_query("chunk number 3") == pytest.approx(vectors[3])
    # an answer's candidate sentences go to the service as documents do
    assert np.allclose(embedder.embed_sentences(texts[:2]), vectors[:2], atol=1e-6)


def test_service_401_raises_with_status_and_message(service: tuple[_Service, str]) -> None:
    _, url = service
    embedder = OpenAiCompatibleEmbedder(url, "sk-wrong", "minilm", 384)
    with pytest.raises(EmbeddingServiceError, match="HTTP 401.*Incorrect API key") as caught:
        embedder.embed_documents(["hello"])
    assert caught.value.status == 401


def test_service_with_wrong_dimension_is_refused(service: tuple[_Service, str]) -> None:
    state, url = service
    state.dimensions = 1536
    embedder = OpenAiCompatibleEmbedder(url, "sk-test", "text-embedding-3-small", 384)
    with pytest.raises(EmbeddingServiceError, match="1536-dimensional.*needs 384"):
        embedder.embed_documents(["hello"])


def test_unreachable_service_raises_clear_error() -> None:
    embedder = OpenAiCompatibleEmbedder("http://127.0.0.1:9/v1", "sk", "minilm", timeout=2)
    with pytest.raises(EmbeddingServiceError, match="unreachable"):
        embedder.embed_query("hello")
