"""Production: refuses to start without a secret key or an audit chain key; secure cookies."""

from django.core.exceptions import ImproperlyConfigured

from provenance_site.env import env_bool, env_int, env_list
from provenance_site.settings.base import *  # noqa: F403
from provenance_site.settings.base import PROVENANCE_AUDIT_KEY, SECRET_KEY

if not SECRET_KEY:
    raise ImproperlyConfigured("DJANGO_SECRET_KEY (or DJANGO_SECRET_KEY_FILE) must be set")
if len(PROVENANCE_AUDIT_KEY) < 32:  # audit/keys.py MIN_KEY_CHARS
    raise ImproperlyConfigured(
        "PROVENANCE_AUDIT_KEY (or PROVENANCE_AUDIT_KEY_FILE) must hold a secret of at least "
        "32 characters, kept outside the database (docs/audit.md)"
    )

SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", True)
CSRF_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", True)
SECURE_CONTENT_TYPE_NOSNIFF = True

# --- HTTPS (`manage.py check --deploy --fail-level WARNING` passes; docs/security.md) ---
DEBUG = False
SECURE_SSL_REDIRECT = env_bool("DJANGO_SSL_REDIRECT", True)
# behind a proxy that terminates TLS: DJANGO_SECURE_PROXY_SSL_HEADER=HTTP_X_FORWARDED_PROTO,https
# (only if that proxy always sets the header: a client could otherwise claim https)
_PROXY_SSL_HEADER = env_list("DJANGO_SECURE_PROXY_SSL_HEADER", [])
if _PROXY_SSL_HEADER:
    if len(_PROXY_SSL_HEADER) != 2:
        raise ImproperlyConfigured("DJANGO_SECURE_PROXY_SSL_HEADER must be HEADER,value")
    SECURE_PROXY_SSL_HEADER = (_PROXY_SSL_HEADER[0], _PROXY_SSL_HEADER[1])
SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 365 * 24 * 3600, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_HSTS_PRELOAD", False)
if not SECURE_HSTS_PRELOAD:
    # joining the browsers' preload list is the domain owner's decision, not a default
    SILENCED_SYSTEM_CHECKS = ["security.W021"]
