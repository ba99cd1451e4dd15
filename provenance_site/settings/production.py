"""Production: refuses to start without a secret key; secure cookies."""

from django.core.exceptions import ImproperlyConfigured

from provenance_site.env import env_bool
from provenance_site.settings.base import *  # noqa: F403
from provenance_site.settings.base import SECRET_KEY

if not SECRET_KEY:
    raise ImproperlyConfigured("DJANGO_SECRET_KEY (or DJANGO_SECRET_KEY_FILE) must be set")

SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", True)
CSRF_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", True)
SECURE_CONTENT_TYPE_NOSNIFF = True
