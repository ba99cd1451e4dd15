"""Settings for a developer machine and ``make run``: debug on, a fixed dev key."""

from provenance_site.env import env_bool, env_str
from provenance_site.settings.base import *  # noqa: F403

SECRET_KEY = env_str("DJANGO_SECRET_KEY", "") or "dev-only-insecure-key-change-me"  # noqa: S105
DEBUG = env_bool("DJANGO_DEBUG", True)
