"""Template filters for text shown to readers (see ``citations/web/rendering.py``)."""

from __future__ import annotations

from django import template

from citations.web.rendering import readable
from core.markdown import markdown_html

register = template.Library()

register.filter("readable", readable)
register.filter("markdown", markdown_html)  # rendered and sanitised; see core/markdown.py
