"""Network helpers for tests that start servers of their own."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port on loopback nobody listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
