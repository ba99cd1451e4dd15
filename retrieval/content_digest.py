"""A fingerprint of an index's retrievable chunks that a change updates instead of
recomputing.

``index_hash`` must change whenever what can be retrieved changes, and every
answer records it. Hashing the sorted list of every chunk on each publish read
the whole index under the vector database's row lock: a cost growing with the
index, serialising every publish into it.

This digest is a set hash (LtHash16, the additive lattice hash of Bellare and
Micciancio as Facebook deployed it): each chunk's ``id:content_hash`` is
stretched by SHAKE-256 to 1024 lanes of 16 bits, and the index's digest is the
lane-wise sum modulo 2^16 of its chunks' lanes. Adding a chunk adds its lanes,
removing it subtracts them, so a publish costs only its own chunks;
the order of changes does not matter, and the digest of a set is the same
however it was reached, so a full recomputation (:func:`digest_of`) checks the
running one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np

LANES = 1024
EMPTY = bytes(2 * LANES)  # the digest of no chunks
_BATCH = 4096  # chunks stretched at a time: 8 MB of lanes


def index_hash_of(*, embed_model: str, analyzer: str, digest: bytes) -> str:
    """An index's identity: its embed model, its analyzer and its chunks' digest."""
    return hashlib.sha256(f"{embed_model}|{analyzer}|".encode() + bytes(digest)).hexdigest()


def empty() -> bytes:
    """The digest of no chunks (a field default by reference, not a 2 KB literal)."""
    return EMPTY


def _lanes(chunks: list[tuple[str, str]]) -> np.ndarray:
    """The lane-wise sum (not yet reduced mod 2^16) of ``(chunk id, content hash)`` pairs."""
    stretched = b"".join(
        hashlib.shake_256(f"{chunk_id}:{content_hash}".encode()).digest(2 * LANES)
        for chunk_id, content_hash in chunks
    )
    rows = np.frombuffer(stretched, dtype="<u2").reshape(len(chunks), LANES)
    return rows.sum(axis=0, dtype=np.uint64)


def digest_of(chunks: Iterable[tuple[object, str]]) -> bytes:
    """The digest of exactly these chunks (ids as UUIDs or their text)."""
    total = np.zeros(LANES, dtype=np.uint64)
    batch: list[tuple[str, str]] = []
    for chunk_id, content_hash in chunks:
        batch.append((str(chunk_id), content_hash))
        if len(batch) == _BATCH:
            total += _lanes(batch)
            batch = []
    if batch:
        total += _lanes(batch)
    return _packed(total)


def digest_changed(
    digest: bytes,
    *,
    added: Iterable[tuple[object, str]],
    removed: Iterable[tuple[object, str]],
) -> bytes:
    """``digest`` with ``added`` chunks put in and ``removed`` ones taken out."""
    return digest_minus(digest_plus(digest, digest_of(added)), digest_of(removed))


def digest_plus(digest: bytes, other: bytes) -> bytes:
    """The digest of both sets (``other`` computed beforehand, e.g. outside a lock)."""
    return _packed(_unpacked(digest) + _unpacked(other))


def digest_minus(digest: bytes, other: bytes) -> bytes:
    """``digest`` without the chunks ``other`` is the digest of."""
    return _packed(_unpacked(digest) - _unpacked(other))


def _unpacked(digest: bytes) -> np.ndarray:
    if len(digest) != len(EMPTY):
        raise ValueError(f"a digest is {len(EMPTY)} bytes, not {len(digest)}")
    return np.frombuffer(bytes(digest), dtype="<u2").astype(np.int64)


def _packed(total: np.ndarray) -> bytes:
    return np.mod(total, 1 << 16).astype("<u2").tobytes()
