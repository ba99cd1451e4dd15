#!/usr/bin/env bash
# `make run`: database, worker and web server with demo data, on one machine.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
PORT="${PORT:-8000}"
export HF_HUB_OFFLINE=1 DJANGO_SETTINGS_MODULE="${DJANGO_SETTINGS_MODULE:-provenance_site.settings.local}"

$PY manage.py migrate --noinput
$PY -m celery -A provenance_site worker -B --concurrency 2 --without-mingle --without-gossip \
  --schedule var/celerybeat-schedule -l info > var/worker.log 2>&1 &
WORKER=$!
trap 'kill $WORKER 2>/dev/null; wait $WORKER 2>/dev/null' EXIT INT TERM
$PY manage.py setup_demo --port "$PORT"
echo "worker log: var/worker.log"
$PY manage.py runserver "127.0.0.1:$PORT" --noreload
