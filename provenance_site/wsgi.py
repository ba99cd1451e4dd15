"""WSGI entry point."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "provenance_site.settings.local")
application = get_wsgi_application()

from retrieval.warm import query_path_warm_in_background  # noqa: E402 (after setup)

query_path_warm_in_background()
