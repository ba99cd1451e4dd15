"""System checks of the documents app: ``manage.py check`` and ``migrate`` (which
``make run`` and the compose file's ``migrate`` service run before anything else
starts) refuse a MuPDF with known flaws (``mupdf_version``)."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Error, register

from documents.converters.pdf.mupdf_version import mupdf_too_old, mupdf_version


@register()
def mupdf_minimum(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """An error naming the minimum when the installed MuPDF is older."""
    problem = mupdf_too_old(mupdf_version())
    if problem is None:
        return []
    return [Error(problem, hint="pip install -U pymupdf", id="documents.E001")]
