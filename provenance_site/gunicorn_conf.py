"""gunicorn settings for ``make run`` and production (``gunicorn -c`` this file).

Threads that live as long as their worker (``gthread``), so each keeps one
database connection for its requests (``CONN_MAX_AGE``): a process holds at most
``threads`` connections plus its search threads' (``PROVENANCE_SEARCH_THREADS``),
however many requests come. Errors gunicorn answers itself (a request line or
headers too long, a malformed request) use the API's JSON error shape.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from gunicorn import util

if TYPE_CHECKING:
    import socket

    from gunicorn.arbiter import Arbiter
    from gunicorn.workers.base import Worker

bind = os.environ.get("GUNICORN_BIND", f"127.0.0.1:{os.environ.get('PORT', '8000')}")
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "120"))
graceful_timeout = 10
# a worker is replaced after this many requests, so whatever a process might hold on to
# (memory, a connection a library forgot) has a ceiling
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "2000"))
max_requests_jitter = max_requests // 10
limit_request_line = 8190
accesslog = os.environ.get("GUNICORN_ACCESS_LOG", "-")
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")

_CODES = {
    400: "bad_request",
    403: "forbidden",
    414: "uri_too_long",
    417: "expectation_failed",
    431: "headers_too_large",
    500: "server_error",
    501: "not_implemented",
}


def _write_json_error(sock: socket.socket, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn's own error answer, in the documented shape instead of an HTML page."""
    kind = "server_error" if status_int >= 500 else "invalid_request_error"
    error = {
        "message": mesg or reason,
        "type": kind,
        "param": None,
        "code": _CODES.get(status_int, "bad_request"),
    }
    body = json.dumps({"error": error}).encode()
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    util.write_nonblock(sock, head.encode("latin-1") + body)


# the workers (forked from the master, which reads this file) call util.write_error
util.write_error = _write_json_error


def worker_exit(server: Arbiter, worker: Worker) -> None:
    """Close this process's database connections as it goes, instead of leaving the
    server to notice the dropped sockets."""
    from django.db import connections

    from retrieval.search import search_threads_close

    search_threads_close()
    connections.close_all()
