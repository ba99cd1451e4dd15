#!/usr/bin/env bash
# `make run`: database, worker and web server with demo data, on one machine, in the
# production shape: gunicorn with DEBUG off, the application connected as a database
# role that owns nothing (migrations as the owner), the embedded PostgreSQL supervised.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
PORT="${PORT:-8000}"
VAR="${PROVENANCE_VAR_DIR:-var}"
mkdir -p "$VAR"
export HF_HUB_OFFLINE=1 DJANGO_SETTINGS_MODULE="${DJANGO_SETTINGS_MODULE:-provenance_site.settings.local}"
export DJANGO_DEBUG="${DJANGO_DEBUG:-0}" PROVENANCE_DB_CONN_MAX_AGE="${PROVENANCE_DB_CONN_MAX_AGE:-60}"

SUPERVISOR="" WORKER="" WEB=""
# TERM, then after $2 seconds TERM again (Celery: stop now, unfinished tasks go back to
# the queue), then KILL
stop_process() {
  local pid=$1 patience=$2
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 $((patience * 2))); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.5; done
  kill -TERM "$pid" 2>/dev/null; sleep 5
  pkill -KILL -P "$pid" 2>/dev/null; kill -KILL "$pid" 2>/dev/null || true
}
stop() {
  trap "" INT TERM; trap - EXIT
  stop_process "$WEB" 15 & local web_stop=$!
  stop_process "$WORKER" 20 & local worker_stop=$!
  wait "$web_stop" "$worker_stop"
  stop_process "$SUPERVISOR" 60
}
trap stop EXIT INT TERM

if [ -z "${DATABASE_URL:-}" ]; then
  # the embedded PostgreSQL, started again if it dies and stopped when we stop
  $PY -m provenance_site.database_supervisor --data-dir "$VAR/pgdata" > "$VAR/database.log" 2>&1 &
  SUPERVISOR=$!
  for _ in $(seq 1 240); do grep -q '^ready' "$VAR/database.log" && break; sleep 0.5; done
  grep -q '^ready' "$VAR/database.log" || { cat "$VAR/database.log" >&2; exit 1; }
fi

# as the owner: the schema, then the application's role and its grants
$PY manage.py migrate --noinput
$PY manage.py database_app_role
$PY manage.py collectstatic --noinput -v 0
if [ -z "${DATABASE_URL:-}" ]; then
  export PROVENANCE_DB_USER="${PROVENANCE_DB_USER:-provenance_app}"
elif [ -n "${PROVENANCE_APP_DATABASE_URL:-}" ]; then
  export DATABASE_URL="$PROVENANCE_APP_DATABASE_URL"
fi

$PY -m celery -A provenance_site worker -B --concurrency 2 --without-mingle --without-gossip \
  --schedule "$VAR/celerybeat-schedule" -l info > "$VAR/worker.log" 2>&1 &
WORKER=$!
$PY manage.py setup_demo --port "$PORT"
$PY manage.py setup_demo_evaluation   # the worker evaluates the demo app once, when its files are ready
echo "worker log: $VAR/worker.log   database log: $VAR/database.log"
PORT="$PORT" $PY -m gunicorn -c provenance_site/gunicorn_conf.py provenance_site.wsgi:application &
WEB=$!
wait "$WEB"
