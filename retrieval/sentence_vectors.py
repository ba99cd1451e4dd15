"""Candidate sentences' vectors, kept per process and reused by later questions.

The extractive generator embeds every sentence of an answer's candidate chunks
for each question: most of an ask's time where documents run in fp32 (a CPU
without native bf16). Questions about the same documents meet the same
sentences again, so their vectors are kept, the least recently used dropped
past ``SENTENCE_VECTORS_KEPT`` (about 1.5 KB each).

A kept vector must be the one a fresh run would give, or an answer would depend
on which questions came before it. ONNX Runtime fp32 gives a text the same bits in
any batch (``QueryEncoder.batch_exact``), so new sentences are embedded in runs;
OpenVINO's products (bf16 and fp32) differ in the last bits with the run's shape,
so there each new sentence is embedded alone, in a run of its own padded width,
which gives it the same bits every time (``QueryEncoder.encode_sentences``; both
tested in ``tests/retrieval/test_sentence_vectors.py``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

SENTENCE_VECTORS_KEPT = 8192


class SentenceVectors:
    """A thread-safe least-recently-used map of text to its (read-only) vector."""

    def __init__(self, capacity: int = SENTENCE_VECTORS_KEPT) -> None:
        self.capacity = capacity
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._vectors)

    def vectors(
        self, texts: Sequence[str], encode: Callable[[list[str]], np.ndarray]
    ) -> np.ndarray:
        """One row per text, in order: kept rows reused, the others from ``encode``
        (each distinct text once) and kept."""
        with self._lock:
            touched = {text: self._touched(text) for text in dict.fromkeys(texts)}
        known = {text: vector for text, vector in touched.items() if vector is not None}
        missing = [text for text in touched if text not in known]
        if missing:
            fresh = encode(missing)
            with self._lock:
                for text, row in zip(missing, fresh, strict=True):
                    vector = row.copy()  # not a view keeping the whole batch alive
                    vector.setflags(write=False)
                    known[text] = self._vectors[text] = vector
                while len(self._vectors) > self.capacity:
                    self._vectors.popitem(last=False)
        return np.stack([known[text] for text in texts])

    def _touched(self, text: str) -> np.ndarray | None:
        vector = self._vectors.get(text)
        if vector is not None:
            self._vectors.move_to_end(text)
        return vector
