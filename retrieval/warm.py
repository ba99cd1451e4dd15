"""Getting a web process ready for its first question before anyone asks it.

Left to the first request, a fresh process loads the model, exports or compiles
the question encoder and reads the search statistics: the first question would
take many times as long as the next ones.
The WSGI and ASGI entry points start :func:`query_path_warm_in_background`
when the process starts; a request that arrives meanwhile waits for the same
loading (the loaders hold locks) instead of loading a second copy. A server
that imports the application before forking its workers (``gunicorn
--preload``) forks them with what the parent has loaded by then; the loading
locks are fresh in every child (``retrieval.embedders``), so a fork in the
middle of loading leaves the child to load its own.
"""

from __future__ import annotations

import logging
import threading
import time

logger = logging.getLogger(__name__)


def query_path_warm() -> float:
    """Load the embedder and the question encoder and read the search statistics;
    returns the seconds it took."""
    from django.db import connections

    from retrieval import search
    from retrieval.embedders import MiniLmEmbedder, default_embedder

    started = time.perf_counter()
    try:
        embedder = default_embedder()
        if isinstance(embedder, MiniLmEmbedder):  # a remote service is not called
            embedder.embed_query("warm-up")
        search.common_lexemes()
    finally:
        connections.close_all()  # this thread's own connection, not a request's
    return time.perf_counter() - started


def query_path_warm_in_background() -> threading.Thread | None:
    """Start :func:`query_path_warm` on a daemon thread unless
    ``PROVENANCE_WARM_EMBEDDER`` is off; a failure is logged, never raised (the
    first question then loads what it needs itself)."""
    from django.conf import settings

    if not settings.PROVENANCE_WARM_EMBEDDER:
        return None

    def warm() -> None:
        try:
            logger.info("query path ready in %.1f s", query_path_warm())
        except Exception:
            logger.warning("warming the query path failed", exc_info=True)

    thread = threading.Thread(target=warm, name="warm-query-path", daemon=True)
    thread.start()
    return thread
