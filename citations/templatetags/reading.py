"""Template filters for text shown to readers (see ``citations/web/rendering.py``)."""

from __future__ import annotations

from django import template

from citations.web.rendering import readable

register = template.Library()

register.filter("readable", readable)
