#!/usr/bin/env bash
# Make sure the services the test suite talks to are up: Redis on loopback
# (for the real-broker test) and Debian's Chromium (for the browser tests).
# Installs them from Debian's packages when missing instead of skipping tests.
set -euo pipefail

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

redis_up() { python3 - <<'PY'
import socket, sys
try:
    s = socket.create_connection(("127.0.0.1", 6379), timeout=1)
    s.sendall(b"PING\r\n"); ok = s.recv(16).startswith(b"+PONG"); s.close()
except OSError:
    ok = False
sys.exit(0 if ok else 1)
PY
}

if ! redis_up; then
  if ! command -v redis-server >/dev/null 2>&1; then
    echo "installing redis-server from Debian's packages"
    as_root apt-get update -qq && as_root apt-get install -y -qq redis-server >/dev/null
  fi
  echo "starting redis-server on 127.0.0.1:6379"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
    --dir /tmp --logfile /tmp/provenance-redis.log
  for _ in $(seq 1 50); do redis_up && break; sleep 0.1; done
  redis_up || { echo "redis did not start" >&2; exit 1; }
fi

if [ ! -x /usr/bin/chromium ]; then
  echo "installing chromium from Debian's packages (browser tests)"
  as_root apt-get update -qq && as_root apt-get install -y -qq chromium >/dev/null
fi

# a font with Hebrew and Arabic letters, for the PDFs the converter tests draw
if [ ! -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]; then
  echo "installing fonts-dejavu-core from Debian's packages (converter tests)"
  as_root apt-get update -qq && as_root apt-get install -y -qq fonts-dejavu-core >/dev/null
fi
