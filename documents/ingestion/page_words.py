"""A PDF's page words, read in a sandbox child and unpacked for narrowing chunk
boxes; any failure leaves whole-line boxes and never fails the file."""

from __future__ import annotations

import logging

from django.conf import settings

from documents.converters.sandbox import pdf_words_isolated
from documents.models import File
from documents.storage import original_open
from documents.word_boxes import DocumentWords, words_unpack

# the pipeline's one logger, whichever module of it writes
logger = logging.getLogger("documents.ingestion")


def page_words_reread(record: File) -> DocumentWords | None:
    """A PDF's page words read again from the original (the convert stage could not),
    so a chunk that starts or ends inside a line is boxed to its own words; ``None``
    (whole-line boxes, logged) when the original cannot be read."""
    if record.kind != "pdf":
        return None
    try:
        with original_open(record.storage_key) as handle:
            data = handle.read()
    except Exception as error:  # storage: never fails the file
        logger.warning("boxes of %s stay whole lines: %s", record.pk, error)
        return None
    packed = page_words_read(data, str(record.pk))
    return None if packed is None else words_unpacked(packed, record.pk)


def page_words_read(data: bytes, file_id: str) -> bytes | None:
    """``pdf_words_isolated`` under the conversion limits (packed words); ``None``
    (logged) if the child fails: the boxes then stay whole lines, the file carries on."""
    try:
        return pdf_words_isolated(
            data,
            timeout_s=settings.PROVENANCE_CONVERT_TIMEOUT_SECONDS,
            memory_mb=settings.PROVENANCE_CONVERT_MEMORY_MB,
        )
    except Exception as error:  # sandbox: never fails the file
        logger.warning("boxes of %s stay whole lines: %s", file_id, error)
        return None


def words_unpacked(packed: bytes, file_id: object) -> DocumentWords | None:
    """Packed words ready for narrowing, or ``None`` (logged) if they cannot be
    unpacked (damaged, or too large for memory)."""
    try:
        return DocumentWords(words_unpack(packed))
    except Exception as error:  # never fails the file
        logger.warning("words of %s unreadable: %s", file_id, error)
        return None
