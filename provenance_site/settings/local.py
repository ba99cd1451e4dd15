"""Settings for a developer machine and ``make run``: a fixed dev key; debug on
unless ``DJANGO_DEBUG=0`` (``make run`` serves with it off, as production does)."""

import os

from provenance_site.env import env_bool, env_str
from provenance_site.settings.base import *  # noqa: F403
from provenance_site.settings.base import DATABASES, VAR_DIR

SECRET_KEY = env_str("DJANGO_SECRET_KEY", "") or "dev-only-insecure-key-change-me"
DEBUG = env_bool("DJANGO_DEBUG", True)
if "PROVENANCE_DB_CONN_MAX_AGE" not in os.environ:
    # runserver starts a thread per request: a kept connection would outlive its thread
    DATABASES["default"]["CONN_MAX_AGE"] = 0
# the audit chain's HMAC key, made on first use when PROVENANCE_AUDIT_KEY(_FILE) is unset
PROVENANCE_AUDIT_KEY_GENERATE_FILE = VAR_DIR / "audit.key"
