"""Test settings: the same real PostgreSQL + pgvector, a broker folder of its own,
short leases so crash recovery is observable within a test."""

import os
from pathlib import Path

from provenance_site.env import env_bool, env_int, env_rate, env_str
from provenance_site.settings.base import *  # noqa: F403
from provenance_site.settings.base import (
    BROKER_DIR,
    CACHES,
    CELERY_BROKER_URL,
    EMBEDDED_DATABASE_NAME,
    PROVENANCE_AUDIT_HEAD_BUCKET,
    VAR_DIR,
    audit_head_storage,
)

# pytest-xdist runs the suite in several processes (`make test`): pytest-django gives
# each a test database of its own (test_<name>_gw0, ...), and everything else a run
# keeps apart by name is kept apart by this one too. A Celery worker a test starts
# inherits PYTEST_XDIST_WORKER, so it lands on the same database, broker and heads.
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
TEST_RUN_NAME = EMBEDDED_DATABASE_NAME + (f"-{XDIST_WORKER}" if XDIST_WORKER else "")

SECRET_KEY = "test-only-key"  # noqa: S105
DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
MEDIA_ROOT = VAR_DIR / "test-media" / TEST_RUN_NAME
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
# no rate limits unless a test sets them (tests/documents/test_throttling.py), and a
# cache key prefix per run name, so two test runs sharing a Redis stay apart
PROVENANCE_THROTTLE_KEY = env_rate("PROVENANCE_THROTTLE_KEY", "off")
PROVENANCE_THROTTLE_ANON = env_rate("PROVENANCE_THROTTLE_ANON", "off")
CACHES = {"default": {**CACHES["default"], "KEY_PREFIX": TEST_RUN_NAME}}
PROVENANCE_INGEST_LEASE_SECONDS = env_int("PROVENANCE_INGEST_LEASE_SECONDS", 8)
PROVENANCE_STALL_SWEEP_SECONDS = env_int("PROVENANCE_STALL_SWEEP_SECONDS", 2)
PROVENANCE_INGEST_REQUEUE_SECONDS = env_int("PROVENANCE_INGEST_REQUEUE_SECONDS", 8)
# the audit chain's key, made on first use; heads per test database, erased by its flush;
# stale answers: above a cold first answer on a loaded 2-core host (the model loads)
PROVENANCE_AUDIT_KEY_GENERATE_FILE = VAR_DIR / "test-audit.key"
PROVENANCE_QUERY_STALE_SECONDS = env_int("PROVENANCE_QUERY_STALE_SECONDS", 120, minimum=1)
PROVENANCE_AUDIT_HEAD_EXPORT_SECONDS = env_int("PROVENANCE_AUDIT_HEAD_EXPORT_SECONDS", 3)
PROVENANCE_AUDIT_HEAD_DIR = Path(
    env_str("PROVENANCE_AUDIT_HEAD_DIR", str(VAR_DIR / f"test-audit-heads-{TEST_RUN_NAME}"))
)
PROVENANCE_AUDIT_HEAD_STORAGE = audit_head_storage(
    PROVENANCE_AUDIT_HEAD_DIR, PROVENANCE_AUDIT_HEAD_BUCKET
)
PROVENANCE_TEST_FLUSH_EVIDENCE = True  # audit/management/commands/flush.py
CELERY_BEAT_SCHEDULE = {
    "resume-stalled-ingestions": {
        "task": "documents.tasks.resume_stalled_ingestions",
        "schedule": float(PROVENANCE_STALL_SWEEP_SECONDS),
    },
    "resume-stalled-runs": {
        "task": "citations.threads.tasks.resume_stalled_runs",
        "schedule": float(PROVENANCE_STALL_SWEEP_SECONDS),
    },
    "sweep-stale-answers": {
        "task": "citations.tasks.sweep_stale_answers",
        "schedule": float(PROVENANCE_STALL_SWEEP_SECONDS),
    },
    "export-audit-head": {
        "task": "audit.tasks.export_audit_head",
        "schedule": float(PROVENANCE_AUDIT_HEAD_EXPORT_SECONDS),
    },
}
if CELERY_BROKER_URL.startswith("provfs"):
    # one folder per run name, so two test runs on one machine stay apart
    TEST_BROKER_DIR = BROKER_DIR.parent / f"test-broker-{TEST_RUN_NAME}"
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

    _test_name = "test_" + DATABASES["default"]["NAME"]
    DATABASES["default"]["NAME"] = f"{_test_name}_{XDIST_WORKER}" if XDIST_WORKER else _test_name
