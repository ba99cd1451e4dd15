"""Test settings: the same real PostgreSQL + pgvector, a broker folder of its own,
short leases so crash recovery is observable within a test."""

from provenance_site.env import env_bool, env_int
from provenance_site.settings.base import *  # noqa: F403
from provenance_site.settings.base import (
    BROKER_DIR,
    CELERY_BROKER_URL,
    EMBEDDED_DATABASE_NAME,
    VAR_DIR,
)

SECRET_KEY = "test-only-key"  # noqa: S105
DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
MEDIA_ROOT = VAR_DIR / "test-media"
STORAGES = {
    "default": {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(MEDIA_ROOT)},
    },
    "originals": {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(MEDIA_ROOT)},
    },
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
PROVENANCE_MAX_UPLOAD_BYTES = env_int("PROVENANCE_MAX_UPLOAD_BYTES", 20 * 1024 * 1024)
PROVENANCE_INGEST_LEASE_SECONDS = env_int("PROVENANCE_INGEST_LEASE_SECONDS", 8)
PROVENANCE_STALL_SWEEP_SECONDS = env_int("PROVENANCE_STALL_SWEEP_SECONDS", 2)
CELERY_BEAT_SCHEDULE = {
    "resume-stalled-ingestions": {
        "task": "documents.tasks.resume_stalled_ingestions",
        "schedule": float(PROVENANCE_STALL_SWEEP_SECONDS),
    },
    "resume-stalled-runs": {
        "task": "citations.threads.tasks.resume_stalled_runs",
        "schedule": float(PROVENANCE_STALL_SWEEP_SECONDS),
    },
}
if CELERY_BROKER_URL.startswith("provfs"):
    # one folder per database name, so two test runs on one machine stay apart
    TEST_BROKER_DIR = BROKER_DIR.parent / f"test-broker-{EMBEDDED_DATABASE_NAME}"
    _dir = TEST_BROKER_DIR
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_dir / "queue"),
        "data_folder_out": str(_dir / "queue"),
        "control_folder": str(_dir / "control"),
        "store_processed": False,
        "polling_interval": 0.1,
    }

# A worker started by the test suite must use the database pytest-django made.
if env_bool("PROVENANCE_TEST_WORKER", False):
    from provenance_site.settings.base import DATABASES

    DATABASES["default"]["NAME"] = "test_" + DATABASES["default"]["NAME"]
