#!/usr/bin/env bash
# Builds the container image (Dockerfile) without any registry and runs service mode from it:
#   1. a Debian bookworm base by debootstrap (python3 + python3-venv), imported as
#      powercontext-base:ci;
#   2. a wheelhouse of requirements.txt, built on this machine by a venv of Debian's python3;
#   3. `docker build --network host` on that base with that wheelhouse (pip --no-index);
#   4. against the PostgreSQL and Redis already running here (host network): migrate (one-shot),
#      web (gunicorn) on a free port, one worker, one beat; then remember -> prepare -> /metrics
#      with the operator token, a worker's vector of the new entry (vector search finds it), the
#      image's HEALTHCHECK, beat sending a task. Containers are removed at the end, pass or fail.
# The debootstrap tarball and the wheelhouse are cached under data/container-cache/ (git-ignored),
# keyed by the mirror and requirements.txt: a rerun on the same machine skips steps 1 and 2.
# Needs root (debootstrap), docker, debootstrap, Debian's /usr/bin/python3 with venv, psql,
# redis-cli and curl. Every failure ends with a "FAIL:" line and a non-zero exit.
#
# Environment (defaults are what .ci/run starts):
#   CONTAINER_CHECK_PG             postgres://powercontext:powercontext@127.0.0.1:5432
#   CONTAINER_CHECK_DB             database created (dropped first) for the run: powercontext_image
#   CONTAINER_CHECK_REDIS          redis://127.0.0.1:6390/11 (flushed first)
#   CONTAINER_CHECK_MIRROR         Debian mirror for debootstrap (default: the one apt uses here)
#   CONTAINER_CHECK_CACHE          data/container-cache
#   CONTAINER_CHECK_DEADLINE       seconds each wait may take (180)
set -euo pipefail
cd "$(dirname "$0")/.."

PG=${CONTAINER_CHECK_PG:-postgres://powercontext:powercontext@127.0.0.1:5432}
DB=${CONTAINER_CHECK_DB:-powercontext_image}
REDIS=${CONTAINER_CHECK_REDIS:-redis://127.0.0.1:6390/11}
CACHE=${CONTAINER_CHECK_CACHE:-data/container-cache}
DEADLINE=${CONTAINER_CHECK_DEADLINE:-180}
BASE_IMAGE=powercontext-base:ci
IMAGE=powercontext:ci
PREFIX=powercontext-ci-$$
started=$(date +%s)
timings=()

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

step_start=0
step() {
  step_start=$(date +%s)
  echo "--- $*"
}
step_done() {
  timings+=("$1: $(($(date +%s) - step_start))s")
  echo "    ${timings[-1]}"
}

apt_mirror() {
  # The first Debian archive URI apt is configured with (deb822 sources or sources.list).
  local uri
  uri=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\/debian\)[[:space:]]*$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
  [ -n "$uri" ] || uri=$(awk '$1=="deb" && $2 ~ /\/debian\/?$/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  echo "${uri:-http://deb.debian.org/debian}"
}

for tool in docker debootstrap psql redis-cli curl python3 /usr/bin/python3; do
  command -v "$tool" >/dev/null || fail "$tool is not installed"
done
[ "$(id -u)" = 0 ] || fail "debootstrap needs root"
docker info >/dev/null 2>&1 || fail "docker does not answer (is dockerd running?)"
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)

containers=()
secrets_dir=""
cleanup() {
  local status=$?
  if [ "$status" -ne 0 ]; then
    for name in "${containers[@]}"; do
      echo "--- last log lines of $name" >&2
      docker logs --tail 40 "$name" >&2 2>&1 || true
    done
  fi
  for name in "${containers[@]}"; do
    docker rm -f "$name" >/dev/null 2>&1 || true
  done
  [ -z "$secrets_dir" ] || rm -rf "$secrets_dir"
  psql "$PG/postgres" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
  exit "$status"
}
trap cleanup EXIT

# --- 1. the base image
mirror=${CONTAINER_CHECK_MIRROR:-$(apt_mirror)}
base_key=$(printf 'v2 bookworm minbase python3 python3-venv %s' "$mirror" | sha256sum | cut -c1-16)
base_tar="$CACHE/base-bookworm-$base_key.tar"
step "base image ($mirror)"
if [ ! -s "$base_tar" ] || [ ! -s "$base_tar.python" ]; then
  rootfs=$(mktemp -d "$CACHE/rootfs.XXXXXX")
  debootstrap --variant=minbase --include=python3,python3-venv bookworm "$rootfs" "$mirror" >"$CACHE/debootstrap.log" 2>&1 \
    || { tail -n 20 "$CACHE/debootstrap.log" >&2; rm -rf "$rootfs"; fail "debootstrap of bookworm from $mirror"; }
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  chmod 0755 "$rootfs" # mktemp's 0700 would become the image's /, closed to the non-root user
  chroot "$rootfs" python3 -c 'import platform; print(platform.python_version())' >"$base_tar.python" \
    || fail "python3 does not run in the debootstrapped base"
  tar -C "$rootfs" -cf "$base_tar.tmp" . && mv "$base_tar.tmp" "$base_tar"
  rm -rf "$rootfs"
fi
base_python=$(cat "$base_tar.python")
if [ "$(docker image inspect -f '{{index .Config.Labels "powercontext.base"}}' "$BASE_IMAGE" 2>/dev/null)" != "$base_key" ]; then
  docker import --change "LABEL powercontext.base=$base_key" --change 'CMD ["/bin/bash"]' "$base_tar" "$BASE_IMAGE" >/dev/null \
    || fail "docker import of $base_tar"
fi
step_done base

# --- 2. the wheelhouse (inside the build context: .dockerignore lets data/container-cache/wheels in).
# Built with a venv of this machine's Debian python3 (/usr/bin/python3: the same release as the
# base's, checked), so that environment markers (python_full_version < "3.11.3": async-timeout
# for redis) resolve as in the image; another python 3.11 would leave out or add wheels.
step "wheelhouse"
wheels="$CACHE/wheels"
[ "$(/usr/bin/python3 -c 'import platform; print(platform.python_version())')" = "$base_python" ] \
  || fail "/usr/bin/python3 here is not the base's python $base_python: the wheelhouse would not match"
wheels_key=$( (cat requirements.txt; echo "$base_python") | sha256sum | cut -c1-16)
if [ "$(cat "$wheels/.key" 2>/dev/null)" != "$wheels_key" ]; then
  rm -rf "$wheels" "$wheels.tmp" "$CACHE/wheel-venv"
  /usr/bin/python3 -m venv "$CACHE/wheel-venv" || fail "/usr/bin/python3 -m venv (install python3-venv)"
  "$CACHE/wheel-venv/bin/pip" wheel --disable-pip-version-check -r requirements.txt -w "$wheels.tmp" \
    >"$CACHE/wheelhouse.log" 2>&1 || { tail -n 20 "$CACHE/wheelhouse.log" >&2; fail "pip wheel -r requirements.txt"; }
  echo "$wheels_key" >"$wheels.tmp/.key"
  mv "$wheels.tmp" "$wheels"
fi
step_done wheelhouse

# --- 3. the image
step "docker build"
context_wheels=${wheels#"$PWD"/}
[ "$context_wheels" != "$wheels" ] || fail "the cache ($CACHE) must be inside the repository (the build context)"
docker build --network host --quiet --force-rm --build-arg "BASE=$BASE_IMAGE" --build-arg "WHEELHOUSE=$context_wheels" \
  -t "$IMAGE" . >/dev/null || fail "docker build"
step_done build

# --- 4. service mode from the image
step "run: migrate, web, worker, beat"
PGOPTIONS='-c client_min_messages=warning' psql "$PG/postgres" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null || fail "cannot reach PostgreSQL at $PG"
psql "$PG/postgres" -qc "CREATE DATABASE $DB" >/dev/null || fail "CREATE DATABASE $DB"
redis_port=$(echo "$REDIS" | sed -n 's#^redis://[^:/]*:\([0-9]*\)/.*#\1#p')
redis_db=${REDIS##*/}
redis-cli -p "${redis_port:-6379}" -n "$redis_db" flushdb >/dev/null || fail "cannot reach Redis at $REDIS"

# Secrets as files, mounted one by one (as compose does); readable by the image's user (10001).
secrets_dir=$(mktemp -d)
python3 -c 'import secrets; print(secrets.token_urlsafe(64))' >"$secrets_dir/secret_key"
python3 -c 'import secrets; print(secrets.token_urlsafe(32))' >"$secrets_dir/operator_token"
printf '%s\n' "$(echo "$PG" | sed -n 's#^postgres://[^:]*:\([^@]*\)@.*#\1#p')" >"$secrets_dir/db_password"
chmod 0444 "$secrets_dir"/*
operator_token=$(cat "$secrets_dir/operator_token")
pg_no_password=$(echo "$PG" | sed 's#^\(postgres://[^:]*\):[^@]*@#\1@#')
web_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base_url="http://127.0.0.1:$web_port"

run_args=(
  --network host --init
  -e "DATABASE_URL=$pg_no_password/$DB" -e DATABASE_PASSWORD_FILE=/run/secrets/db_password
  -e "CELERY_BROKER_URL=$REDIS" -e SECRET_KEY_FILE=/run/secrets/secret_key
  -e POWERCONTEXT_OPERATOR_TOKEN_FILE=/run/secrets/operator_token -e ALLOWED_HOSTS=127.0.0.1,localhost
  -v "$secrets_dir/secret_key:/run/secrets/secret_key:ro"
  -v "$secrets_dir/db_password:/run/secrets/db_password:ro"
  -v "$secrets_dir/operator_token:/run/secrets/operator_token:ro"
)
containers+=("$PREFIX-migrate")
docker run --name "$PREFIX-migrate" "${run_args[@]}" "$IMAGE" python manage.py migrate --noinput >/dev/null \
  || fail "migrate (one-shot container)"
agent_token=$(docker run --rm "${run_args[@]}" "$IMAGE" python manage.py create_api_token container-check | tail -n 1)
[ -n "$agent_token" ] || fail "create_api_token printed no token"

containers+=("$PREFIX-web" "$PREFIX-worker" "$PREFIX-beat")
docker run -d --name "$PREFIX-web" "${run_args[@]}" -e "PORT=$web_port" "$IMAGE" >/dev/null || fail "start web"
docker run -d --name "$PREFIX-worker" "${run_args[@]}" --no-healthcheck "$IMAGE" \
  celery -A powercontext worker --loglevel=INFO --concurrency=1 --without-gossip --without-mingle >/dev/null \
  || fail "start worker"
# A short embed-sweep interval, so that beat has sent a task within the check's time.
docker run -d --name "$PREFIX-beat" "${run_args[@]}" --no-healthcheck -e POWERCONTEXT_EMBED_SWEEP_SECONDS=5 "$IMAGE" \
  celery -A powercontext beat --loglevel=INFO >/dev/null || fail "start beat"

# wait_for DESCRIPTION COMMAND...: polls COMMAND (every 0.5 s) until it succeeds, at most DEADLINE s.
wait_for() {
  local what=$1 until=$(($(date +%s) + DEADLINE))
  shift
  until "$@" >/dev/null 2>&1; do
    for name in "$PREFIX-web" "$PREFIX-worker" "$PREFIX-beat"; do
      [ "$(docker inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" = true ] || fail "$name stopped while waiting for $what"
    done
    [ "$(date +%s)" -lt "$until" ] || fail "$what: not within ${DEADLINE}s"
    sleep 0.5
  done
}
wait_for "web /health/ready" curl -fsS "$base_url/health/ready"
step_done "run (start to ready)"

step "drive: remember -> prepare -> vectors -> /metrics"
scope=container-check
text="Run the migrate container once per deploy, before starting new web containers."
api() { # api PATH JSON: POST with the agent token; prints the body, fails on a non-2xx status
  curl -fsS -X POST "$base_url$1" -H "Authorization: Bearer $agent_token" -H 'content-type: application/json' -d "$2"
}
# json_field EXPR [ARG]: prints EXPR evaluated with r = the JSON document on stdin, a = ARG.
# (No `... | grep -q` anywhere: grep quitting early breaks the writer's pipe, which pipefail fails.)
json_field() { python3 -c "import json, sys; print(eval(sys.argv[1], {'r': json.load(sys.stdin), 'a': sys.argv[2]}))" "$1" "${2:-}"; }

remembered=$(api /v1/memory/remember "{\"scope_id\": \"$scope\", \"kind\": \"note\", \"text\": \"$text\"}") \
  || fail "remember"
[ "$(echo "$remembered" | json_field "r['entry']['text']")" = "$text" ] || fail "remember did not store the text"
prepared=$(api /v1/context/prepare "{\"scope_id\": \"$scope\", \"query\": \"When do I run the migrate container before starting web containers?\"}") \
  || fail "prepare"
[ "$(echo "$prepared" | json_field "r['status']")" = ready ] || fail "prepare: status is not ready"
[ "$(echo "$prepared" | json_field "a in r['content']" "$text")" = True ] || fail "prepare: the remembered entry is not in the context"

vector_hit() {
  api /v1/memory/search "{\"scope_id\": \"$scope\", \"query\": \"migrations before a deploy\", \"mode\": \"vector\"}" \
    | json_field "any('vector' in h['matched_by'] and h['text'] == a for h in r['hits'])" "$text" >"$secrets_dir/hit"
  [ "$(cat "$secrets_dir/hit")" = True ]
}
wait_for "the worker's vector of the new entry (vector search)" vector_hit

detail=$(curl -fsS "$base_url/health/detail" -H "Authorization: Bearer $operator_token") || fail "/health/detail with the operator token"
[ "$(echo "$detail" | json_field "r['workers_alive'] >= 1 and r['embed_backlog'] == 0")" = True ] \
  || fail "/health/detail: no live worker or an embed backlog"

status=$(curl -s -o /dev/null -w '%{http_code}' "$base_url/metrics")
[ "$status" = 403 ] || fail "/metrics without the operator token answered $status, not 403"
metrics=$(curl -fsS "$base_url/metrics" -H "Authorization: Bearer $operator_token") || fail "/metrics with the operator token"
grep -Eq '^powercontext_prepare_total [1-9]' <<<"$metrics" || fail "/metrics: powercontext_prepare_total did not count the prepare"
grep -Eq '^powercontext_workers_alive [1-9]' <<<"$metrics" || fail "/metrics: no live worker"
step_done drive

step "image HEALTHCHECK, beat"
web_healthy() { [ "$(docker inspect -f '{{.State.Health.Status}}' "$PREFIX-web")" = healthy ]; }
wait_for "the web container's HEALTHCHECK" web_healthy
beat_sent() { [[ "$(docker logs "$PREFIX-beat" 2>&1)" == *"Sending due task"* ]]; }
wait_for "beat sending a due task" beat_sent
[ "$(docker inspect -f '{{.Config.User}}' "$IMAGE")" = powercontext ] || fail "the image does not run as its non-root user"
step_done "healthcheck and beat"

echo "--- container check passed in $(($(date +%s) - started))s (${timings[*]})"
