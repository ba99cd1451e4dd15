"""The ingestion pipeline's stages: convert → chunk → embed → ready.

Each stage claims its file with a conditional UPDATE (status + an expired or
absent lease, :mod:`documents.leases`), so a stage runs at most once at a time
per file however many workers or duplicate messages there are; a heartbeat of
the process doing the work keeps the lease while it runs, and each stage
replaces its own output atomically, so re-running it never duplicates anything.
A worker that dies leaves a lease that expires; ``ingestion_resume_stalled``
re-queues it. The embed stage runs in slices that go to the back of the queue,
so a large file never holds back the files uploaded after it.

Modules:

- ``convert``, ``chunk``, ``embed``: the three stages (``page_words``: a PDF's
  words for the boxes; ``batches``: one embedding batch; ``reuse``: vectors of
  earlier conversions reused);
- ``publish``: a finished conversion made the active one;
- ``status``: a file moved on, made ready or failed; ``queueing``: its queue;
- ``limits``: what one file may make;
- ``requeue``: stalled files resumed, failed ones retried, ready ones converted again;
- ``cancel`` and ``delete``: stopping a file's ingestion, deleting a document.

The stage entry points and the operations below are re-exported here: the tests
(and scripts) call them as ``ingestion.<name>`` on ``from documents import
ingestion``; code of the project imports them from their module.
"""

from documents.ingestion.chunk import file_chunk
from documents.ingestion.convert import converter_label, file_convert
from documents.ingestion.delete import file_delete
from documents.ingestion.embed import file_embed, file_embed_share
from documents.ingestion.limits import CHUNKS_LIMIT, MARKDOWN_LIMIT
from documents.ingestion.requeue import (
    file_reconvert,
    file_retry,
    ingestion_resume_stalled,
    retry_can_help,
)

__all__ = [
    "CHUNKS_LIMIT",
    "MARKDOWN_LIMIT",
    "converter_label",
    "file_chunk",
    "file_convert",
    "file_delete",
    "file_embed",
    "file_embed_share",
    "file_reconvert",
    "file_retry",
    "ingestion_resume_stalled",
    "retry_can_help",
]
