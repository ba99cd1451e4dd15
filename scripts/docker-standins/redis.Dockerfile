# Debian's Redis 7, started as the official image starts it (protected mode off:
# the stack's other containers reach it over the compose network).
FROM provenance-standin/python:3.11-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends redis-server \
 && rm -rf /var/lib/apt/lists/* && mkdir -p /data && chown redis /data
WORKDIR /data
USER redis
EXPOSE 6379
# `command: ["redis-server", ...]` as for the official image: its arguments kept
ENTRYPOINT ["sh", "-c", "if [ \"${1:-}\" = redis-server ]; then shift; fi; exec redis-server --protected-mode no \"$@\"", "redis"]
CMD ["redis-server"]
