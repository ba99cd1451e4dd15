"""core's one table: the rate limits' counting windows (``core.throttling``).

``Organization``, ``OrganizationMember`` and ``ApiKey`` keep their ``documents``
tables and migrations (moving a model between apps would rewrite data for no gain);
the kernel's logic about them lives here in core.
"""

from __future__ import annotations

from django.db import models


class ThrottleWindow(models.Model):
    """One caller's current window of a rate limit: ``hits`` requests counted since
    the window opened, until ``window_end``. Written only by ``core.throttling``'s
    upsert, which counts and opens a new window in one statement, so concurrent
    requests never lose a count; rows of windows long over are swept by it too."""

    key = models.CharField(max_length=200, primary_key=True)  # scope and caller
    window_end = models.DateTimeField(db_index=True)
    hits = models.PositiveIntegerField()

    def __str__(self) -> str:
        return f"{self.key}: {self.hits} until {self.window_end:%H:%M:%S}"
