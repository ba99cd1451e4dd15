"""Rate limits of the REST API: one budget per API key (or signed-in user), one per
address for anonymous callers (public apps), counted where every web worker process
sees the same counts.

Past its budget a caller gets 429 in the error shape with ``Retry-After``
(``core/errors.py``). Rates are ``PROVENANCE_THROTTLE_KEY`` and
``PROVENANCE_THROTTLE_ANON`` ("120/min"; empty or "off" for none); they are read
on each request, so a changed setting applies at once.

Counting is a fixed window per caller, opened by the caller's first request and
lasting the rate's period; each request adds one to it *atomically* and passes if
its own count is within the budget. Reading a list of past requests and writing it
back (DRF's ``SimpleRateThrottle``) loses counts when a key's requests run at once:
20 clients on one key got ~1,000 requests through a budget of 600. Here a budget
holds exactly within a window, however many processes and threads share the key;
the one slack is a fixed window's: a caller who spends its budget at a window's end
can spend the next one at once, so any stretch of one period may see up to twice
the rate. ``Retry-After`` is the seconds until the window ends.

Where the counts live: Redis (``INCR`` and expiry in one script) when the cache
``PROVENANCE_THROTTLE_CACHE`` is a Redis cache, else the database (an upsert on
``core.ThrottleWindow``: ``INSERT … ON CONFLICT DO UPDATE … RETURNING``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.core.management import call_command
from django.db import connection
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from core.authentication import api_key_of

REDIS_BACKEND = "django.core.cache.backends.redis.RedisCache"
# windows swept at most this many at a time, when some caller opens a new window
SWEEP_BATCH = 500

# one round trip, atomic (Redis runs a script alone): the count, and the milliseconds
# left of the window, whose expiry the first request sets (a key left without one,
# should a client have written it so, gets one too)
_REDIS_HIT = """
local hits = redis.call('INCR', KEYS[1])
local left = redis.call('PTTL', KEYS[1])
if left < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  left = tonumber(ARGV[1])
end
return {hits, left}
"""

_DATABASE_HIT = """
INSERT INTO core_throttlewindow AS w (key, window_end, hits) VALUES (%(key)s, %(end)s, 1)
ON CONFLICT (key) DO UPDATE SET
  hits = CASE WHEN w.window_end <= %(now)s THEN 1 ELSE w.hits + 1 END,
  window_end = CASE WHEN w.window_end <= %(now)s THEN EXCLUDED.window_end ELSE w.window_end END
RETURNING hits, window_end
"""

# rows of windows over, a batch of those no request holds; none waits for another
_DATABASE_SWEEP = """
DELETE FROM core_throttlewindow WHERE key IN (
  SELECT key FROM core_throttlewindow WHERE window_end <= %(now)s
  LIMIT %(batch)s FOR UPDATE SKIP LOCKED
)
"""


@dataclass(frozen=True)
class Hit:
    """A request counted: its place in the window and the seconds the window has left."""

    count: int
    seconds_left: float


def hit_count(key: str, *, period_s: int, now: float) -> Hit:
    """Count one request of ``key`` in its window of ``period_s`` seconds, opening a
    new window if the last one is over at ``now`` (epoch seconds)."""
    cache = caches[settings.PROVENANCE_THROTTLE_CACHE]
    if settings.CACHES[settings.PROVENANCE_THROTTLE_CACHE]["BACKEND"] == REDIS_BACKEND:
        return _redis_hit(cache.make_key(key), period_s=period_s)
    return _database_hit(key, period_s=period_s, now=now)


def _redis_hit(key: str, *, period_s: int) -> Hit:
    hits, left_ms = _redis_script(_redis_location())(keys=[key], args=[period_s * 1000])
    return Hit(int(hits), int(left_ms) / 1000)


def _redis_location() -> str:
    location = settings.CACHES[settings.PROVENANCE_THROTTLE_CACHE]["LOCATION"]
    return location if isinstance(location, str) else location[0]  # the primary


@functools.cache
def _redis_script(location: str) -> Any:
    """The counting script on a client of ``location``, one per process (redis-py's
    pool is thread-safe); Django's cache API has no atomic count-with-expiry."""
    import redis

    return redis.Redis.from_url(location).register_script(_REDIS_HIT)


def _database_hit(key: str, *, period_s: int, now: float) -> Hit:
    moment = datetime.fromtimestamp(now, tz=UTC)
    params: dict[str, str | datetime] = {
        "key": key,
        "now": moment,
        "end": moment + timedelta(seconds=period_s),
    }
    with connection.cursor() as cursor:
        cursor.execute(_DATABASE_HIT, params)
        hits, window_end = cursor.fetchone()
        if hits == 1:  # a new window: the moment to clear some of those long over
            cursor.execute(_DATABASE_SWEEP, {"now": moment, "batch": SWEEP_BATCH})
    return Hit(hits, (window_end - moment).total_seconds())


class _SettingRateThrottle(SimpleRateThrottle):
    """A throttle whose rate is a Django setting (DRF reads its rates once, at
    import), counted by :func:`hit_count`."""

    setting = ""

    def get_rate(self) -> str | None:
        return getattr(settings, self.setting) or None

    def allow_request(self, request: Request, view: Any) -> bool:
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        limit, period_s = self.parse_rate(self.rate)  # what DRF's __init__ keeps untyped
        assert limit is not None and period_s is not None  # a rate is set
        self.hit = hit_count(self.key, period_s=period_s, now=self.timer())
        return self.hit.count <= limit

    def wait(self) -> float:
        """Until the window ends, in whole seconds (at least one: it has not ended)."""
        return max(1, math.ceil(self.hit.seconds_left))


class ApiKeyRateThrottle(_SettingRateThrottle):
    """Per API key; a signed-in user (session) counts as their own caller."""

    scope = "key"
    setting = "PROVENANCE_THROTTLE_KEY"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        key = api_key_of(request)
        if key is not None:
            ident = f"key-{key.pk}"
        elif request.user is not None and request.user.is_authenticated:
            ident = f"user-{request.user.pk}"
        else:
            return None
        return self.cache_format % {"scope": self.scope, "ident": ident}


class AnonymousRateThrottle(_SettingRateThrottle):
    """Per client address, for callers with neither key nor login. The address is
    the connection's own unless ``PROVENANCE_TRUSTED_PROXIES`` says how many proxies
    in front of us append to ``X-Forwarded-For`` (a client could write that header)."""

    scope = "anon"
    setting = "PROVENANCE_THROTTLE_ANON"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if api_key_of(request) is not None or (
            request.user is not None and request.user.is_authenticated
        ):
            return None
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


def cache_table_ensure(**kwargs: Any) -> None:
    """After ``migrate``: create the database cache's table if a cache uses one
    (``createcachetable`` does nothing for a table that exists)."""
    uses_table = any(
        cache["BACKEND"].endswith("DatabaseCache") for cache in settings.CACHES.values()
    )
    if uses_table:
        call_command("createcachetable", database=kwargs.get("using", "default"), verbosity=0)
