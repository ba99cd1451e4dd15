"""Strict environment readers: a bad value stops start-up with a clear message."""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    """A string setting; ``NAME_FILE`` (a path) wins over ``NAME`` for secrets."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        try:
            with open(path, encoding="utf-8") as handle:
                return handle.read().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={path!r} cannot be read: {exc}") from exc
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false)")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from exc
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below the minimum {minimum}")
    return value


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def query_threads() -> int:
    """``PROVENANCE_QUERY_THREADS`` (default 2): the query encoder's threads for one question.

    Two threads embed a question faster than one in either runtime (bf16 on
    OpenVINO, fp32 on ONNX Runtime), and were no slower with both cores busy.
    """
    return env_int("PROVENANCE_QUERY_THREADS", 2, minimum=1)


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


_RATE = re.compile(r"^\d+/(s|sec|second|m|min|minute|h|hour|d|day)$")


def env_rate(name: str, default: str) -> str | None:
    """A request rate, ``"N/min"`` (``s``, ``min``, ``hour``, ``day``); empty or
    ``off`` for no limit."""
    raw = os.environ.get(name, default).strip()
    if raw.lower() in ("", "off"):
        return None
    if not _RATE.match(raw):
        raise ImproperlyConfigured(f"{name}={raw!r} is not a rate such as 60/min (or off)")
    return raw


def env_origin(name: str, default: str) -> str:
    """An http(s) origin (scheme, host, optional port; no path, query or credentials),
    such as ``https://docs.example.com``: links are made on it, their path as Django
    reverses it (a prefix the site is mounted under is ``FORCE_SCRIPT_NAME``'s)."""
    raw = os.environ.get(name, "").strip() or default
    try:
        parts = urlsplit(raw)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
    except ValueError:  # a port that is no number, a malformed IPv6 host
        valid = False
    extra = parts.path.strip("/") or parts.query or parts.fragment or "@" in parts.netloc
    if not valid or extra or len(raw) > 300:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not an http(s) origin such as https://docs.example.com"
        )
    return raw.rstrip("/")


def secret_file_ensure(path: Path, make: Callable[[], str]) -> str:
    """The secret in ``path``, made there by ``make`` (mode 0600) when it is missing.
    Concurrent first uses agree: the file appears atomically (a hard link that fails
    if the name exists), so no reader ever sees it half written."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        temporary.touch(mode=0o600)
        temporary.write_text(make() + "\n")
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass
        finally:
            temporary.unlink()
    return path.read_text().strip()
