"""Candidate sentences' vectors kept between questions: only where a kept vector is
bit for bit the one a fresh call gives, whatever the batch."""

from __future__ import annotations

import itertools
import json
import random

import numpy as np
import pytest

from retrieval.embedders import MiniLmEmbedder
from retrieval.onnx_query import (
    RUN_START_TOKENS,
    SENTENCE_PAD,
    OnnxQueryEncoder,
    OpenVinoQueryEncoder,
    QueryEncoder,
    length_runs,
)
from retrieval.sentence_vectors import SentenceVectors
from tests.support.corpus import CORPUS

SQUAD = CORPUS / "qa" / "squad-v1.1-dev-subset6.json"


@pytest.fixture(scope="module")
def sentences() -> list[str]:
    data = json.loads(SQUAD.read_text(encoding="utf-8"))
    found = [
        " ".join(s.split()) + "."
        for article in data["data"]
        for paragraph in article["paragraphs"][:6]
        for s in paragraph["context"].split(". ")
        if len(s) > 20
    ]
    assert len(found) > 100
    return found[:120]


@pytest.fixture(scope="module")
def fp32_encoder() -> QueryEncoder:
    """The fp32 query encoder (ONNX Runtime), as a CPU without native bf16 runs it."""
    encoder = MiniLmEmbedder(batch_size=16, precision="fp32")._questions()
    assert isinstance(encoder, OnnxQueryEncoder)
    return encoder


def test_onnx_runtime_gives_a_text_the_same_bits_in_any_batch(
    fp32_encoder: QueryEncoder, sentences: list[str]
) -> None:
    """The premise of keeping vectors: alone, in order, shuffled among others."""
    assert fp32_encoder.batch_exact
    in_order = fp32_encoder.encode_many(sentences)
    shuffled = list(range(len(sentences)))
    random.Random(7).shuffle(shuffled)
    mixed = fp32_encoder.encode_many([sentences[i] for i in shuffled])
    assert np.array_equal(mixed[np.argsort(shuffled)], in_order)
    for n in range(0, len(sentences), 10):
        assert np.array_equal(fp32_encoder.encode(sentences[n]), in_order[n]), sentences[n]


def _run_cost(lengths: list[int], runs: list[list[int]]) -> int:
    return sum(RUN_START_TOKENS + len(run) * max(lengths[i] for i in run) for run in runs)


def test_texts_of_unlike_lengths_are_cut_into_runs_of_similar_length() -> None:
    """Ten short sentences and a long one are two runs, not one padded to the long
    one; chunks of one length fill runs of the most allowed; and on any lengths the
    cut costs no more padded tokens than runs of the most allowed in length order."""
    assert length_runs([15] * 10 + [90], 16) == [list(range(10)), [10]]
    assert [len(run) for run in length_runs([200] * 64, 16)] == [16, 16, 16, 16]
    assert length_runs([], 16) == []
    assert length_runs([30, 20, 10], 1) == [[2], [1], [0]]
    rng = random.Random(3)
    cheaper = 0
    for _ in range(200):
        lengths = [rng.choice((rng.randint(8, 40), rng.randint(8, 250))) for _ in range(25)]
        runs = length_runs(lengths, 16)
        assert sorted(i for run in runs for i in run) == list(range(len(lengths)))
        assert all(1 <= len(run) <= 16 for run in runs)
        ordered = [i for run in runs for i in run]
        assert [lengths[i] for i in ordered] == sorted(lengths)
        in_order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        fixed = [in_order[n : n + 16] for n in range(0, len(in_order), 16)]
        assert _run_cost(lengths, runs) <= _run_cost(lengths, fixed)
        cheaper += _run_cost(lengths, runs) < _run_cost(lengths, fixed)
    assert cheaper > 150
    padded = length_runs([17, 31, 33, 47], 16, pad_to_multiple=16)  # widths 32, 32, 48, 48
    assert padded == [[0, 1], [2, 3]]
    for _ in range(100):  # the fewest of every way to cut the sorted lengths
        lengths = [rng.randint(5, 120) for _ in range(rng.randint(1, 9))]
        most = rng.randint(1, 5)
        assert _run_cost(lengths, length_runs(lengths, most)) == _fewest(sorted(lengths), most)


def _fewest(lengths: list[int], most: int) -> int:
    """Brute force: the cheapest cut of these sorted lengths into runs of <= ``most``."""
    best = None
    for cuts in itertools.product((False, True), repeat=len(lengths) - 1):
        runs, run = [], [lengths[0]]
        for length, cut in zip(lengths[1:], cuts, strict=True):
            if cut:
                runs.append(run)
                run = []
            run.append(length)
        runs.append(run)
        if all(len(r) <= most for r in runs):
            cost = sum(RUN_START_TOKENS + len(r) * max(r) for r in runs)
            best = cost if best is None else min(best, cost)
    assert best is not None
    return best


def test_an_answers_candidates_run_with_little_padding_and_their_own_vectors(
    fp32_encoder: OnnxQueryEncoder, sentences: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Short sentences with one long one among them: the runs' tokens stay near
    the texts' own (one run padded to the longest had 2-3 times them), and each
    vector is the one the text gets alone."""
    shapes: list[tuple[int, int]] = []
    run = fp32_encoder._token_states

    def recorded(input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        shapes.append(input_ids.shape)
        return run(input_ids, attention_mask)

    longest = max(sentences, key=len)
    candidates = sorted(sentences, key=len)[:12] + [longest]
    with monkeypatch.context() as patched:
        patched.setattr(fp32_encoder, "_token_states", recorded)
        vectors = fp32_encoder.encode_many(candidates)
    tokens = [len(ids) for ids in fp32_encoder.tokenizer(candidates)["input_ids"]]
    padded = sum(rows * width for rows, width in shapes)
    assert len(shapes) >= 2
    assert padded <= 1.25 * sum(tokens) < len(candidates) * max(tokens)
    for text, vector in zip(candidates, vectors, strict=True):
        assert np.array_equal(fp32_encoder.encode(text), vector), text


def test_kept_vectors_are_reused_and_equal_fresh_ones(
    fp32_encoder: QueryEncoder, sentences: list[str]
) -> None:
    encoded: list[str] = []

    def encode(texts: list[str]) -> np.ndarray:
        encoded.extend(texts)
        return fp32_encoder.encode_many(texts)

    kept = SentenceVectors()
    first = kept.vectors(sentences[:40] + sentences[:5], encode)
    assert encoded == sentences[:40]  # a repeated text is embedded once
    assert np.array_equal(first[40:], first[:5])
    encoded.clear()
    second = kept.vectors(sentences[20:60], encode)
    assert encoded == sentences[40:60]  # only the ones not seen before
    assert np.array_equal(second, fp32_encoder.encode_many(sentences[20:60]))
    with pytest.raises(ValueError):
        second_row = kept.vectors(sentences[20:21], encode)[0]
        kept._vectors[sentences[20]][0] = 1.0  # kept rows are read-only
    assert np.array_equal(second_row, second[0])


def test_the_least_recently_used_text_goes_first(
    fp32_encoder: QueryEncoder, sentences: list[str]
) -> None:
    kept = SentenceVectors(capacity=3)
    a, b, c, d = sentences[:4]
    kept.vectors([a, b, c], fp32_encoder.encode_many)
    kept.vectors([a], fp32_encoder.encode_many)  # a used again: b is now the oldest
    kept.vectors([d], fp32_encoder.encode_many)
    assert len(kept) == 3
    assert set(kept._vectors) == {a, c, d}


def test_the_embedders_sentences_come_from_the_kept_vectors_in_fp32(
    sentences: list[str],
) -> None:
    embedder = MiniLmEmbedder(batch_size=16, precision="fp32")
    encoder = embedder._questions()
    assert encoder.kept_sentences is not None
    first = embedder.embed_sentences(sentences[:30])
    assert len(encoder.kept_sentences) == 30
    assert embedder.embed_sentences(sentences[10:30]) == first[10:30]
    assert np.array_equal(np.asarray(first, dtype=np.float32), encoder.encode_many(sentences[:30]))


def _openvino_encoders() -> list[QueryEncoder]:
    """OpenVINO in fp32 (any CPU) and, where the CPU has native bf16, in bf16: the
    embedder's own bf16 question encoder."""
    fp32 = MiniLmEmbedder(batch_size=16, precision="fp32")._questions()
    encoders: list[QueryEncoder] = [
        OpenVinoQueryEncoder(fp32.onnx_file, fp32.tokenizer, threads=2, precision="fp32")
    ]
    native = MiniLmEmbedder(batch_size=16)._questions()
    if isinstance(native, OpenVinoQueryEncoder):
        assert native.precision == "bf16"
        encoders.append(native)
    return encoders


def test_openvino_keeps_sentences_each_embedded_alone_with_the_bits_of_a_fresh_call(
    sentences: list[str],
) -> None:
    """OpenVINO's vectors change in the last bits with a run's shape, so its new
    sentences run one per call: a kept vector is then the one a fresh call gives,
    whatever ran before it."""
    for encoder in _openvino_encoders():
        assert not encoder.batch_exact
        first = encoder.encode_sentences(sentences[:30])
        assert len(encoder.kept_sentences) >= 30
        encoder.encode_many(sentences[30:90])  # other shapes and batches run between
        fresh = OpenVinoQueryEncoder(
            encoder.onnx_file, encoder.tokenizer, threads=2, precision=encoder.precision
        )
        again = fresh.encode_sentences(list(reversed(sentences[:30])))[::-1]
        assert np.array_equal(again, first), encoder.precision
        assert np.array_equal(encoder.encode_sentences(sentences[10:30]), first[10:30])
        for n in range(0, 30, 7):
            alone = encoder.encode_many([sentences[n]], pad_to_multiple=SENTENCE_PAD)[0]
            assert np.array_equal(alone, first[n]), sentences[n]
        batched = encoder.encode_many(sentences[:30])
        assert float(np.min((batched * first).sum(axis=1))) > 0.9999, encoder.precision
