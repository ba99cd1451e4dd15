"""Provenance site package; importing it makes the Celery app available to Django."""

from provenance_site.celery import app as celery_app

__all__ = ["celery_app"]
