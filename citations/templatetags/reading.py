"""Template filters for text shown to readers (answers: ``citations/presentation.py``;
passages: ``citations/web/rendering.py``)."""

from __future__ import annotations

from django import template

from citations import presentation
from citations.web.rendering import readable
from core.markdown import markdown_html

register = template.Library()

register.filter("readable", readable)
register.filter("markdown", markdown_html)  # rendered and sanitised; see core/markdown.py
# an answer (or a step's answer) without links on its [n]; a quoted sentence of an
# answer (reply_sentence); a document's sentence as stored (source_sentence, quote)
register.filter("answer_html", lambda text: presentation.answer_html(text or ""))
register.filter("answer_text", lambda text: presentation.answer_text(text or ""))
register.filter("reply_html", presentation.reply_html)
register.filter("quote_html", presentation.quote_html)
