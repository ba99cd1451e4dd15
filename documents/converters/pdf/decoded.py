"""The decoded length of a PDF stream, measured in bounded memory, up to a cap.

MuPDF decodes a stream's filters to read it, and holds some streams whole; a
gigabyte of zeros compresses to a megabyte. Here the filters are run the same way,
but Flate output is only counted, a chunk at a time, and every stage stops past the
cap, so measuring a bomb costs the cap's worth of decompression and no more memory
than a chunk (``DECODE_CHUNK_BYTES``); the filters that cannot expand much (hex,
base-85) or are rare (run-length, LZW) decode their input whole, which the cap bounds.

Image codecs (DCT, JPX, JBIG2, CCITT) end the chain: text extraction does not decode
images, so what reaches them is what counts. A damaged stream counts what decoded
before the damage, as MuPDF reads it.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from collections.abc import Callable, Iterable, Iterator

from documents.converters.pdf.thresholds import DECODE_CHUNK_BYTES

IMAGE_CODECS = frozenset({"DCTDecode", "DCT", "JPXDecode", "JBIG2Decode", "CCITTFaxDecode", "CCF"})
_WHITESPACE = re.compile(rb"[\x00\t\n\x0c\r ]")


def decoded_length(raw: bytes, filters: list[str], cap: int) -> int:
    """The length of ``raw`` through ``filters`` (a stream's ``/Filter``, in order),
    or ``cap + 1`` if it is longer than ``cap``."""
    chunks: Iterable[bytes] = [raw]
    for name in filters:
        if name in IMAGE_CODECS:
            break
        stage = _STAGES.get(name)
        if stage is None:  # an unknown filter: MuPDF cannot read past it either
            break
        chunks = stage(chunks, cap)
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > cap:
            return cap + 1
    return total


def _flate(chunks: Iterable[bytes], cap: int) -> Iterator[bytes]:
    """Inflated ``DECODE_CHUNK_BYTES`` at a time; stops past ``cap`` or at damage."""
    inflater, out = zlib.decompressobj(), 0
    try:
        for data in chunks:
            pending = data
            while pending and out <= cap:
                piece = inflater.decompress(pending, DECODE_CHUNK_BYTES)
                pending = inflater.unconsumed_tail
                out += len(piece)
                yield piece
            if out > cap or inflater.eof:
                return
    except zlib.error:
        return  # what inflated before the damage is what MuPDF reads too


def _gathered(chunks: Iterable[bytes], limit: int) -> bytes:
    """The input of a stage that decodes whole, at most ``limit`` bytes of it."""
    parts, size = [], 0
    for chunk in chunks:
        parts.append(chunk)
        size += len(chunk)
        if size > limit:
            break
    return b"".join(parts)[: limit + 1]


def _whole(
    decode: Callable[[bytes, int], bytes],
) -> Callable[[Iterable[bytes], int], Iterator[bytes]]:
    """A stage that decodes its (capped) input in one piece."""

    def stage(chunks: Iterable[bytes], cap: int) -> Iterator[bytes]:
        yield decode(_gathered(chunks, 2 * cap + 2), cap)  # hex halves its input

    return stage


def _hex(data: bytes, cap: int) -> bytes:
    digits = _WHITESPACE.sub(b"", data).split(b">", 1)[0]
    try:
        return binascii.unhexlify(digits + b"0" * (len(digits) % 2))
    except binascii.Error:
        return b""


def _base85(data: bytes, cap: int) -> bytes:
    text = _WHITESPACE.sub(b"", data).split(b"~>", 1)[0]
    try:
        return base64.a85decode(text.removeprefix(b"<~"))
    except ValueError:
        return b""


def _run_length(data: bytes, cap: int) -> bytes:
    out, at = bytearray(), 0
    while at < len(data) and len(out) <= cap:
        length = data[at]
        if length == 128:  # end of data
            break
        if length < 128:
            out += data[at + 1 : at + 2 + length]
            at += 2 + length
        else:
            out += data[at + 1 : at + 2] * (257 - length)
            at += 2
    return bytes(out)


def _lzw(data: bytes, cap: int) -> bytes:
    """LZW as PDF writes it (MSB first, 9-12 bit codes, early change)."""
    table = [bytes([n]) for n in range(256)] + [b"", b""]  # 256 clear, 257 end
    out, previous, width, buffer, bits = bytearray(), b"", 9, 0, 0
    for byte in data:
        buffer, bits = (buffer << 8) | byte, bits + 8
        while bits >= width:
            bits -= width
            code = (buffer >> bits) & ((1 << width) - 1)
            if code == 256:
                table, previous, width = table[:258], b"", 9
                continue
            if code == 257 or len(out) > cap:
                return bytes(out)
            entry = table[code] if code < len(table) else previous + previous[:1]
            if previous and len(table) < 4096:
                table.append(previous + entry[:1])
            out += entry
            previous = entry
            width = min(12, max(9, (len(table) + 1).bit_length()))
    return bytes(out)


def _as_is(chunks: Iterable[bytes], cap: int) -> Iterator[bytes]:
    """``/Crypt``: the raw bytes are read decrypted already."""
    yield from chunks


_STAGES: dict[str, Callable[[Iterable[bytes], int], Iterator[bytes]]] = {
    "Crypt": _as_is,
    "FlateDecode": _flate,
    "Fl": _flate,
    "ASCIIHexDecode": _whole(_hex),
    "AHx": _whole(_hex),
    "ASCII85Decode": _whole(_base85),
    "A85": _whole(_base85),
    "RunLengthDecode": _whole(_run_length),
    "RL": _whole(_run_length),
    "LZWDecode": _whole(_lzw),
    "LZW": _whole(_lzw),
}
