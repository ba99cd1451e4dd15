"""How long to wait before starting a dead child again."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Backoff:
    """Doubling delays from ``first_s`` up to ``ceiling_s``; a life of at least
    ``settled_s`` starts the count over, so a child that crashes once a day is back
    within ``first_s`` while one that dies at start-up does not spin."""

    first_s: float = 1.0
    ceiling_s: float = 30.0
    settled_s: float = 60.0
    failures: int = 0

    def delay(self, *, lived_s: float) -> float:
        """The wait before the next start of a child whose last life was ``lived_s``."""
        if lived_s >= self.settled_s:
            self.failures = 0
        delay = min(self.ceiling_s, self.first_s * 2**self.failures)
        self.failures += 1
        return delay
