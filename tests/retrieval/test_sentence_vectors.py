"""Candidate sentences' vectors kept between questions: only where a kept vector is
bit for bit the one a fresh call gives, whatever the batch."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from retrieval.embedders import MiniLmEmbedder
from retrieval.onnx_query import OnnxQueryEncoder, OpenVinoQueryEncoder, QueryEncoder
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


def test_bf16_on_openvino_keeps_nothing() -> None:
    """OpenVINO's bf16 vectors change in the last bits with the batch's width, so
    a kept one could differ from a fresh one: nothing is kept there."""
    assert not OpenVinoQueryEncoder.batch_exact
    embedder = MiniLmEmbedder(batch_size=16)
    encoder = embedder._questions()
    if isinstance(encoder, OpenVinoQueryEncoder):  # a CPU with native bf16
        assert encoder.kept_sentences is None
        embedder.embed_sentences(["One sentence.", "Another one."])
        assert encoder.kept_sentences is None
    else:
        assert isinstance(encoder, OnnxQueryEncoder) and encoder.kept_sentences is not None
