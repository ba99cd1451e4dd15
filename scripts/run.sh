#!/usr/bin/env bash
# `make run`: database, worker, beat and web server with demo data, on one machine, in the
# production shape: gunicorn with DEBUG off, the application connected as a database
# role that owns nothing (migrations as the owner), every part supervised
# (provenance_site/supervisor: started again when it dies, stopped in order on
# SIGTERM/SIGINT, none left behind; docs/operations.md). PROVENANCE_RUN_DEMO=0 skips
# the demo's setup.
set -euo pipefail
cd "$(dirname "$0")/.."
export PORT="${PORT:-8000}"
export HF_HUB_OFFLINE=1 DJANGO_SETTINGS_MODULE="${DJANGO_SETTINGS_MODULE:-provenance_site.settings.local}"
export DJANGO_DEBUG="${DJANGO_DEBUG:-0}" PROVENANCE_DB_CONN_MAX_AGE="${PROVENANCE_DB_CONN_MAX_AGE:-60}"
# exec: the supervisor is the process make (or a process manager) signals
exec .venv/bin/python -m provenance_site.supervisor
