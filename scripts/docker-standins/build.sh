#!/usr/bin/env bash
# Stand-ins for the three public images docker-compose.yml starts from
# (python:3.11-slim-bookworm, pgvector/pgvector, redis), built from Debian's
# packages and PyPI for a Docker host that cannot reach Docker Hub. They are tagged
# provenance-standin/*, never with the public names, so nothing mistakes them for
# the real images; scripts/docker-standins/compose.yml points the stack at them.
#
# The Python base carries this host's extra CA certificates
# (/usr/local/share/ca-certificates), so pip inside a build trusts a TLS-inspecting
# proxy the host trusts. Needs root, debootstrap and a running Docker daemon.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
rootfs="$(mktemp -d /tmp/provenance-standin-rootfs.XXXXXX)"
trap 'rm -rf "$rootfs"' EXIT

echo "debootstrap bookworm (minbase, python3) into $rootfs"
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
  bookworm "$rootfs" "$mirror" >/dev/null
cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/" 2>/dev/null || true
chroot "$rootfs" update-ca-certificates >/dev/null
# the official image's layout: `python` and `pip` on PATH, installing into one prefix
chroot "$rootfs" python3 -m venv /usr/local/python
rm -rf "$rootfs/var/cache/apt/archives/"*.deb "$rootfs/var/lib/apt/lists/"*
tar -C "$rootfs" -c . | docker import \
  --change 'ENV PATH=/usr/local/python/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
  --change 'ENV REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt' \
  --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
  --change 'CMD ["python3"]' \
  - provenance-standin/python:3.11-bookworm >/dev/null
echo "built provenance-standin/python:3.11-bookworm"

docker build -q -t provenance-standin/pgvector:pg16 -f "$here/pgvector.Dockerfile" "$here"
echo "built provenance-standin/pgvector:pg16"
docker build -q -t provenance-standin/redis:7 -f "$here/redis.Dockerfile" "$here"
echo "built provenance-standin/redis:7"
