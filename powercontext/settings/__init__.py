"""Settings for PowerContext, read from environment variables (docs/operators.md "Configuration").

The helpers that read and check each value are in ``env.py``; the logging configuration in
``logging_config.py``."""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from kombu import Queue

from powercontext.settings.database import POSTGRESQL_ENGINE, database
from powercontext.settings.env import (
    env_bool,
    env_fraction,
    env_int,
    env_list,
    env_proxy_ssl_header,
    generated_secret_key,
    read_secret_file,
)
from powercontext.settings.logging_config import logging_config
from powercontext.settings.login import *  # noqa: F403 - the log-in settings, as Django settings

BASE_DIR = Path(__file__).resolve().parent.parent.parent


DEBUG = env_bool("DEBUG", False)
DATA_DIR = Path(os.environ.get("POWERCONTEXT_DATA_DIR", BASE_DIR / "data"))

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# --- HTTPS (docs/operators.md "Configuration"; docs/production.env passes check --deploy) ----------------
# Off by default: the embedded default serves plain http://127.0.0.1:8000, where secure-only
# cookies would make the Review Inbox login impossible.
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", False)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
# Health probes reach app servers directly over plain HTTP (load balancers, orchestrators).
SECURE_REDIRECT_EXEMPT = [r"^health/", r"^metrics$"]
SECURE_PROXY_SSL_HEADER = env_proxy_ssl_header("SECURE_PROXY_SSL_HEADER")
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # runserver serves static files through WhiteNoise too, exactly as gunicorn does.
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "axes",
    # Domain apps, lowest layer first (docs/architecture.md; import-linter keeps the direction).
    "powercontext.core",
    "powercontext.search",
    "powercontext.memory",
    "powercontext.feedback",
    "powercontext.recovery",
    "powercontext.prepare",
    "review",
    "powercontext.pipeline",
    "context_api",
    "powercontext.evaluation",
    "drf_spectacular_sidecar",  # self-hosted Redoc for /v1/docs
]

MIDDLEWARE = [
    "context_api.middleware.RequestIdMiddleware",
    # Every database wait of a request is bounded (a hung PostgreSQL gives a fast 503).
    "powercontext.core.db_faults.AnswerLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "powercontext.core.csp.ContentSecurityPolicyMiddleware",
    # Last, as django-axes requires: turns a locked-out log-in into the refusal page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "powercontext.urls"
WSGI_APPLICATION = "powercontext.wsgi.application"
ASGI_APPLICATION = "powercontext.asgi.application"

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


# --- Database -------------------------------------------------------------------------------
# Unset DATABASE_URL: a SQLite file in DATA_DIR (the embedded default); postgres://...: PostgreSQL
# through psycopg 3 (service mode). Options and timeouts: database.py.
DATABASE_URL = os.environ.get("DATABASE_URL", "").strip()
DATABASES = {"default": database(DATABASE_URL, DATA_DIR)}
# Covering indexes (``Index(include=...)``, migration 0023) carry their extra columns on
# PostgreSQL; SQLite builds the same index on its key columns alone, by design. Its system check
# would print that on every command of the embedded default.
SILENCED_SYSTEM_CHECKS = ["models.W040"]
# /health/ready gives up on the database after this many milliseconds (PostgreSQL): its write
# check's statement timeout, and its answer limit on a hung server.
POWERCONTEXT_READY_TIMEOUT_MS = env_int("POWERCONTEXT_READY_TIMEOUT_MS", 2000, minimum=1)
# In a request, a wait on a PostgreSQL server that does not answer (hung, stopped) gives up after
# this many milliseconds: the connection is closed and the request answers 503 (0: no limit).
# Workers and commands are not bounded by it (core/db_faults.py; docs/operators.md).
POWERCONTEXT_DB_ANSWER_TIMEOUT_MS = env_int("POWERCONTEXT_DB_ANSWER_TIMEOUT_MS", 2500)
# Celery workers write a heartbeat row this often; the health detail view and /metrics call a
# worker stale after two periods without one (one missed beat is a database blip).
POWERCONTEXT_WORKER_HEARTBEAT_SECONDS = env_int("POWERCONTEXT_WORKER_HEARTBEAT_SECONDS", 15, minimum=1)
# Operators: GET /health/detail and GET /metrics take `Authorization: Bearer <this token>`
# (the detail view also a staff log-in). Unset: /metrics is refused (docs/operations.md).
_operator_token_file = os.environ.get("POWERCONTEXT_OPERATOR_TOKEN_FILE", "").strip()
POWERCONTEXT_OPERATOR_TOKEN = (
    read_secret_file(Path(_operator_token_file), "POWERCONTEXT_OPERATOR_TOKEN_FILE")
    if _operator_token_file
    else os.environ.get("POWERCONTEXT_OPERATOR_TOKEN", "").strip()
)
# Request metrics (counters and histograms per route): on unless false (docs/operations.md).
POWERCONTEXT_METRICS = env_bool("POWERCONTEXT_METRICS", True)
# Seconds a client is told to wait (Retry-After) when a 503 says the database is unavailable.
POWERCONTEXT_RETRY_AFTER_SECONDS = env_int("POWERCONTEXT_RETRY_AFTER_SECONDS", 5, minimum=1)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Passwords and log-in throttling: powercontext/settings/login.py.

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# Static files (the admin's CSS and JS) are served by the app itself through WhiteNoise, from
# STATIC_ROOT as filled by `manage.py collectstatic --noinput` (`make run` runs it): compressed,
# with content-hashed names that are cached forever. {% static %} needs the manifest that
# collectstatic writes, so run it on every deploy before starting the app servers.
STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("POWERCONTEXT_STATIC_ROOT", DATA_DIR / "static"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

# Error pages: HTML in the Inbox's look on browser routes, the JSON envelope elsewhere.
CSRF_FAILURE_VIEW = "context_api.errors.csrf_failure"

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/review/"

# --- API ------------------------------------------------------------------------------------
# Bearer tokens: when POWERCONTEXT_REQUIRE_TOKEN is true every /v1 operation needs a valid
# token; otherwise a token is optional (and, when present, must be valid). Reviewer actions
# always need a reviewer token (see docs/reviewers.md). Default: true in service mode (set below,
# after SERVICE_MODE), false in the embedded default.

# Local embeddings (vector/hybrid search, a derived index): on unless turned off; they are off
# by themselves when the model packages cannot load.
POWERCONTEXT_EMBEDDINGS = env_bool("POWERCONTEXT_EMBEDDINGS", True)
# async: writers insert no vector; the embedder fills the gap after commit (a per-process thread
# in the embedded default, the powercontext.embed_pending task in service mode). sync: embed in
# the writer's transaction (slower writes, vectors at once). docs/operators.md "Search maintenance".
POWERCONTEXT_EMBED_WRITES = os.environ.get("POWERCONTEXT_EMBED_WRITES", "async").strip() or "async"
if POWERCONTEXT_EMBED_WRITES not in {"async", "sync"}:
    raise ImproperlyConfigured(
        f"POWERCONTEXT_EMBED_WRITES must be async or sync, got {POWERCONTEXT_EMBED_WRITES!r}"
    )
# Vector search ranks in process, exactly, over per-scope matrices cached in each process
# (docs/decisions.md). This bounds that cache in MiB (Memory and Experience vectors together,
# least recently used scopes out first); 0 caches nothing. ~15 MiB holds 10k entries' vectors.
POWERCONTEXT_VECTOR_CACHE_MB = env_int("POWERCONTEXT_VECTOR_CACHE_MB", 256, minimum=0)
# Scopes with more active Memory vectors are ranked over a shortlist (docs/retrieval.md).
POWERCONTEXT_VECTOR_EXACT_ROWS = env_int("POWERCONTEXT_VECTOR_EXACT_ROWS", 50_000, minimum=1)
# A gunicorn worker, before it accepts requests, fills its caches (vectors within the bound above,
# membership order, index totals) for at most this many of the most recently active scopes
# (prepared within a day, then by latest write), for at most this many seconds; 0 scopes: none.
# powercontext/warmup.py, docs/operators.md.
POWERCONTEXT_PRELOAD_SCOPES = env_int("POWERCONTEXT_PRELOAD_SCOPES", 32, minimum=0)
POWERCONTEXT_PRELOAD_SECONDS = env_int("POWERCONTEXT_PRELOAD_SECONDS", 5, minimum=0)
# The relevance floor (powercontext/search/ranking/relevance.py; calibration in docs/retrieval.md): a
# Memory or Experience candidate reaches the builder only when its raw cosine similarity to the
# query is at least MIN_SIMILARITY, or when it covers at least MIN_LEXICAL_SHARE of the query's
# IDF mass and its similarity (if it has a vector) is at least MIN_LEXICAL_SIMILARITY. All three
# at 0 turn the floor off. A candidate in another language than English (told by py3langid:
# search/fulltext/language_id.py) needs at least MIN_SIMILARITY_OTHER_LANGUAGES on meaning alone
# unless the query is surely English (0: the same as English).
POWERCONTEXT_RELEVANCE_MIN_SIMILARITY = env_fraction("POWERCONTEXT_RELEVANCE_MIN_SIMILARITY", 0.38)
POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SHARE = env_fraction("POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SHARE", 0.30)
POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SIMILARITY = env_fraction(
    "POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SIMILARITY", 0.20
)
POWERCONTEXT_RELEVANCE_MIN_SIMILARITY_OTHER_LANGUAGES = env_fraction(
    "POWERCONTEXT_RELEVANCE_MIN_SIMILARITY_OTHER_LANGUAGES", 0.60
)
# The pack's cut (powercontext.prepare.cut; docs/retrieval.md "The pack's cut"): on hybrid
# rankings, Memory hits after the first whose estimated chance of being evidence is below this
# are left out of the pack (0: off, every admitted hit up to the windows).
POWERCONTEXT_PACK_CUT = env_fraction("POWERCONTEXT_PACK_CUT", 0.042)
# Feedback (powercontext.feedback; docs/retrieval.md "Learning from use"). Among hits the floor
# admitted, a hit's score is multiplied by 1 + prior, |prior| <= PRIOR_CAP (0: off): use raises
# it (full at SATURATION_USES uses, halved every HALF_LIFE_DAYS since the last use), reports
# below the hold lower it. A Memory entry version reported wrong or outdated by HOLD_REPORTERS
# distinct tokens is held out of prepare until a person decides (0: never held). A reporter may
# add at most RATE_PER_MINUTE feedback rows a minute (0: no limit).
POWERCONTEXT_FEEDBACK_PRIOR_CAP = env_fraction("POWERCONTEXT_FEEDBACK_PRIOR_CAP", 0.10)
POWERCONTEXT_FEEDBACK_SATURATION_USES = env_int("POWERCONTEXT_FEEDBACK_SATURATION_USES", 8, minimum=1)
POWERCONTEXT_FEEDBACK_HALF_LIFE_DAYS = env_int("POWERCONTEXT_FEEDBACK_HALF_LIFE_DAYS", 30, minimum=1)
POWERCONTEXT_FEEDBACK_HOLD_REPORTERS = env_int("POWERCONTEXT_FEEDBACK_HOLD_REPORTERS", 2, minimum=0)
POWERCONTEXT_FEEDBACK_RATE_PER_MINUTE = env_int("POWERCONTEXT_FEEDBACK_RATE_PER_MINUTE", 240, minimum=0)
# Service mode: at most one embed task per scope per this many seconds from one process (sent
# with this countdown), and the beat sweep's interval for gaps nobody signalled.
POWERCONTEXT_EMBED_COALESCE_SECONDS = env_int("POWERCONTEXT_EMBED_COALESCE_SECONDS", 1, minimum=0)
POWERCONTEXT_EMBED_SWEEP_SECONDS = env_int("POWERCONTEXT_EMBED_SWEEP_SECONDS", 60, minimum=1)
# Texts the embedder (the thread, an embed task) runs through the model at once, each alone on
# its own core (one model session per process); 0: as many as the cores this process may use.
# Catch-up is bound by the model's CPU time: docs/operators.md "Embedding catch-up".
POWERCONTEXT_EMBED_THREADS = env_int("POWERCONTEXT_EMBED_THREADS", 0, minimum=0)
# Browser origins allowed to call the API (comma-separated, exact "scheme://host[:port]"). A request
# carrying any other Origin header is refused (403); requests without one (agents, hooks, curl)
# are not affected. Empty by default: no browser page may call /mcp.
POWERCONTEXT_ALLOWED_ORIGINS = env_list("POWERCONTEXT_ALLOWED_ORIGINS", [])

# Review Inbox: a decision commits at once; its reviewer may Undo it for this many minutes
# (review/services/undo.py; later, Reopen / Retire / Revert on the candidate's page). 0: no Undo.
POWERCONTEXT_REVIEW_UNDO_MINUTES = env_int("POWERCONTEXT_REVIEW_UNDO_MINUTES", 10, minimum=0)
# Four-eyes review: when true, nobody approves a candidate holding text they wrote, or citing a
# source they captured (Inbox, bulk and /v1 alike: 403 self_approval_forbidden); a Revert is
# proposed for another reviewer; every /v1 call needs a token. Off by default (docs/reviewers.md
# "Four-eyes review").
POWERCONTEXT_REVIEW_FOUR_EYES = env_bool("POWERCONTEXT_REVIEW_FOUR_EYES", False)
# Review Inbox: opening a candidate marks it "being reviewed by you" for this long (the open page
# renews it); Next and j/k skip items another reviewer is viewing. Never blocks a decision.
POWERCONTEXT_REVIEW_VIEWING_SECONDS = env_int("POWERCONTEXT_REVIEW_VIEWING_SECONDS", 120, minimum=10)
# How many of those markers one reviewer holds at once: opening or renewing one more releases her
# oldest, so no reviewer (or script) hides more than this many items from the others.
POWERCONTEXT_REVIEW_VIEWING_MAX = env_int("POWERCONTEXT_REVIEW_VIEWING_MAX", 3, minimum=1)
# Near-duplicates (review/selectors/similar.py): the weighted similarity at or above which two
# proposals of a scope are one. 0.4 is calibrated on powercontext/evaluation/data/near_duplicates.jsonl
# (`manage.py eval_near_duplicates` reports precision and recall at it).
POWERCONTEXT_NEAR_DUPLICATE_THRESHOLD = env_fraction("POWERCONTEXT_NEAR_DUPLICATE_THRESHOLD", 0.4)

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    # OPTIONS answers with the Allow header only: the contract defines no body, and DRF's
    # default metadata would expose class names.
    "DEFAULT_METADATA_CLASS": "context_api.metadata.AllowOnlyMetadata",
    "EXCEPTION_HANDLER": "context_api.errors.exception_handler",
}

# --- Celery ---------------------------------------------------------------------------------
# Unset CELERY_BROKER_URL: tasks run eagerly in-process. Set (redis://...): real workers.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "").strip()
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
# No result backend by default: nothing reads task results, and a backend makes every publish
# subscribe to it (a web request then waits on the broker's reconnect loop during an outage).
# Setting one (tests that call result.get()) stores results again.
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", "").strip() or None
CELERY_TASK_IGNORE_RESULT = CELERY_RESULT_BACKEND is None
# Workers keep reconnecting to the broker for as long as it is down (the default gives up after
# 100 attempts), at start-up too.
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# The web tier's after-commit publish (powercontext/core/broker.py): connect/socket timeout in
# seconds, no retries, and how long publishing is skipped after a failure. The database is the
# queue of record; the beat sweeps catch up on whatever was not published.
POWERCONTEXT_BROKER_PUBLISH_TIMEOUT = float(os.environ.get("POWERCONTEXT_BROKER_PUBLISH_TIMEOUT", "0.25"))
POWERCONTEXT_BROKER_BACKOFF_SECONDS = env_int("POWERCONTEXT_BROKER_BACKOFF_SECONDS", 5)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_TIME_LIMIT = int(os.environ.get("CELERY_TASK_TIME_LIMIT", "3600"))
CELERY_TASK_SOFT_TIME_LIMIT = int(os.environ.get("CELERY_TASK_SOFT_TIME_LIMIT", "3300"))
CELERY_WORKER_PREFETCH_MULTIPLIER = 1

# --- Background pipeline ----------------------------------------------------------------------
# Captured sessions become Memory and pending Experience candidates (docs/operators.md "Background pipeline").
# POWERCONTEXT_GENERATOR: rules (deterministic, offline; the default), openai, or off.
POWERCONTEXT_GENERATOR = os.environ.get("POWERCONTEXT_GENERATOR", "rules").strip() or "rules"
if POWERCONTEXT_GENERATOR not in {"rules", "openai", "off"}:
    raise ImproperlyConfigured(
        f"POWERCONTEXT_GENERATOR must be rules, openai or off, got {POWERCONTEXT_GENERATOR!r}"
    )
POWERCONTEXT_PIPELINE = {
    "idle_seconds": env_int("POWERCONTEXT_PIPELINE_IDLE_SECONDS", 1800),
    "max_age_days": env_int("POWERCONTEXT_PIPELINE_MAX_AGE_DAYS", 30, minimum=1),
    "lease_seconds": env_int("POWERCONTEXT_PIPELINE_LEASE_SECONDS", 600, minimum=1),
    "backoff_seconds": env_int("POWERCONTEXT_PIPELINE_BACKOFF_SECONDS", 60),
    "run_cap": env_int("POWERCONTEXT_PIPELINE_RUN_CAP", 200, minimum=1),
    "running_cap": env_int("POWERCONTEXT_PIPELINE_RUNNING_CAP", 32, minimum=1),
    "projection_bytes": env_int("POWERCONTEXT_PIPELINE_PROJECTION_BYTES", 65536, minimum=1024),
    "cooldown_seconds": env_int("POWERCONTEXT_PIPELINE_COOLDOWN_SECONDS", 600),
    "selection_cap": env_int("POWERCONTEXT_PIPELINE_SELECTION_CAP", 1000, minimum=1),
    "retention_days": env_int("POWERCONTEXT_PIPELINE_RETENTION_DAYS", 90, minimum=1),
    "polluted_origins": env_list("POWERCONTEXT_PIPELINE_POLLUTED_ORIGINS", []),
    "excluded_scopes": env_list("POWERCONTEXT_PIPELINE_EXCLUDED_SCOPES", []),
}
# Session recovery notes (powercontext/recovery; docs/agents/session-recovery.md): each note keeps
# its newest this many versions; a write prunes the older ones in its own transaction.
POWERCONTEXT_RECOVERY_NOTE_VERSIONS = env_int("POWERCONTEXT_RECOVERY_NOTE_VERSIONS", 5, minimum=1)
# One history search reads at most this many UTF-8 bytes of a session's sources (in the database
# and here); a session larger than that is searched in parts (`partial`, `next_after_position`).
POWERCONTEXT_RECOVERY_HISTORY_SEARCH_BYTES = env_int(
    "POWERCONTEXT_RECOVERY_HISTORY_SEARCH_BYTES", 4_194_304, minimum=65_536
)
# Celery beat (service mode): how often the sweep redacts again the Sources stored under an older
# detector version (powercontext.redact_stale_sources; docs/redaction.md).
POWERCONTEXT_SOURCE_REDACT_SWEEP_SECONDS = env_int("POWERCONTEXT_SOURCE_REDACT_SWEEP_SECONDS", 600, minimum=1)
# Celery beat (service mode): how often the pipeline scan runs.
POWERCONTEXT_PIPELINE_SCAN_SECONDS = env_int("POWERCONTEXT_PIPELINE_SCAN_SECONDS", 300, minimum=1)

# --- Prepare aggregates (docs/operators.md) ----------------------------------------------------
# Per scope, UTC hour and search mode: counts, sizes and a latency histogram of prepares, never
# the query or any text. Buffered in each process and written by a background thread every
# FLUSH_SECONDS (0: no thread; the buffer is then never written), so a prepare never writes.
POWERCONTEXT_PREPARE_AUDIT = env_bool("POWERCONTEXT_PREPARE_AUDIT", True)
POWERCONTEXT_PREPARE_AUDIT_FLUSH_SECONDS = env_int("POWERCONTEXT_PREPARE_AUDIT_FLUSH_SECONDS", 10)
POWERCONTEXT_PREPARE_AUDIT_MAX_BUCKETS = env_int("POWERCONTEXT_PREPARE_AUDIT_MAX_BUCKETS", 10000, minimum=1)
POWERCONTEXT_PREPARE_AUDIT_RETENTION_DAYS = env_int(
    "POWERCONTEXT_PREPARE_AUDIT_RETENTION_DAYS", 30, minimum=1
)

# Beat keeps its last-run times in a shelve file (celerybeat-schedule.*): in the data directory,
# not in the working directory (a checkout). `celery beat -s PATH` still overrides it.
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULER = "powercontext.celery:DataDirScheduler"
# Beat's periodic tasks go to their own queue, so a backlog of embedding or pipeline jobs never
# delays the sweeps that find lost work. A worker started without -Q consumes both queues;
# `-Q periodic` / `-Q celery` split them across workers (docs/operations.md).
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_QUEUES = (Queue("celery", routing_key="celery"), Queue("periodic", routing_key="periodic"))
_PERIODIC = {"queue": "periodic", "routing_key": "periodic"}
CELERY_BEAT_SCHEDULE = {
    "pipeline-scan": {
        "task": "powercontext.pipeline_scan",
        "schedule": float(POWERCONTEXT_PIPELINE_SCAN_SECONDS),
        "options": _PERIODIC,
    },
    "embed-pending-sweep": {
        "task": "powercontext.embed_pending_sweep",
        "schedule": float(POWERCONTEXT_EMBED_SWEEP_SECONDS),
        "options": _PERIODIC,
    },
    "prepare-aggregates-prune": {
        "task": "powercontext.prune_prepare_aggregates",
        "schedule": 3600.0,
        "options": _PERIODIC,
    },
    "redact-stale-sources": {
        "task": "powercontext.redact_stale_sources",
        "schedule": float(POWERCONTEXT_SOURCE_REDACT_SWEEP_SECONDS),
        "options": _PERIODIC,
    },
}

# --- Secret key -----------------------------------------------------------------------------
# Service mode (PostgreSQL or a Celery broker) runs several processes that must share one key,
# so it has to be configured: SECRET_KEY, or SECRET_KEY_FILE naming a file that holds it.
# The embedded default (SQLite, eager tasks) needs no configuration: it generates a random key
# once into DATA_DIR/secret_key (mode 0600) and reuses it on every later start.
SERVICE_MODE = DATABASES["default"]["ENGINE"] == POSTGRESQL_ENGINE or bool(CELERY_BROKER_URL)
# Issue 20, N11: a served deployment requires tokens unless told otherwise, so --scope and the
# token roles mean something there. Four-eyes review needs to know who wrote each proposal and
# captured each source (issue 32), so it requires tokens too, and refuses to run without them.
POWERCONTEXT_REQUIRE_TOKEN = env_bool(
    "POWERCONTEXT_REQUIRE_TOKEN", SERVICE_MODE or POWERCONTEXT_REVIEW_FOUR_EYES
)
if POWERCONTEXT_REVIEW_FOUR_EYES and not POWERCONTEXT_REQUIRE_TOKEN:
    raise ImproperlyConfigured(
        "POWERCONTEXT_REVIEW_FOUR_EYES=true needs tokens (who wrote a proposal must be known): "
        "leave POWERCONTEXT_REQUIRE_TOKEN unset or set it to true."
    )
_secret_key = os.environ.get("SECRET_KEY", "").strip()
_secret_key_file = os.environ.get("SECRET_KEY_FILE", "").strip()
if _secret_key and _secret_key_file:
    raise ImproperlyConfigured("Set only one of SECRET_KEY and SECRET_KEY_FILE.")
if _secret_key:
    SECRET_KEY = _secret_key
elif _secret_key_file:
    SECRET_KEY = read_secret_file(Path(_secret_key_file), "SECRET_KEY_FILE")
elif SERVICE_MODE and not DEBUG:
    raise ImproperlyConfigured(
        "SECRET_KEY is not set. In service mode (a postgres:// DATABASE_URL or a CELERY_BROKER_URL) "
        "every app server and worker must share one secret key: set SECRET_KEY, or SECRET_KEY_FILE "
        "to a file that contains it (see docs/operators.md, Configuration)."
    )
else:
    SECRET_KEY = generated_secret_key(DATA_DIR / "secret_key")

# --- Logging --------------------------------------------------------------------------------
# Nothing untrusted (queries, snippets, scope ids, entry ids, bodies) is ever logged; the
# request logger writes method, route name, status and latency only.
LOG_LEVEL = os.environ.get("LOG_LEVEL", "INFO").upper()
# plain (default) or json: one JSON object per line (time, level, logger, request_id, message).
LOG_FORMAT = os.environ.get("LOG_FORMAT", "plain").strip().lower() or "plain"
if LOG_FORMAT not in {"plain", "json"}:
    raise ImproperlyConfigured(f"LOG_FORMAT must be plain or json, got {LOG_FORMAT!r}")
# Celery workers and beat log through the handler above (privacy filter included) instead of
# replacing the root logger's handlers with their own.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
LOGGING = logging_config(level=LOG_LEVEL, log_format=LOG_FORMAT)

# --- Pipeline: the OpenAI-compatible generator (POWERCONTEXT_GENERATOR=openai) ------------------
# Any chat-completions endpoint; the key comes from POWERCONTEXT_OPENAI_API_KEY_FILE (preferred)
# or POWERCONTEXT_OPENAI_API_KEY, and is sent only as the bearer header, never logged.
POWERCONTEXT_OPENAI_BASE_URL = os.environ.get("POWERCONTEXT_OPENAI_BASE_URL", "").strip().rstrip("/")
POWERCONTEXT_OPENAI_MODEL = os.environ.get("POWERCONTEXT_OPENAI_MODEL", "").strip()
_openai_key_file = os.environ.get("POWERCONTEXT_OPENAI_API_KEY_FILE", "").strip()
POWERCONTEXT_OPENAI_API_KEY = (
    read_secret_file(Path(_openai_key_file), "POWERCONTEXT_OPENAI_API_KEY_FILE")
    if _openai_key_file
    else os.environ.get("POWERCONTEXT_OPENAI_API_KEY", "").strip()
)
_openai_timeout = os.environ.get("POWERCONTEXT_OPENAI_TIMEOUT", "").strip() or "60"
try:
    POWERCONTEXT_OPENAI_TIMEOUT = float(_openai_timeout)
except ValueError:
    POWERCONTEXT_OPENAI_TIMEOUT = 0.0
if not 0 < POWERCONTEXT_OPENAI_TIMEOUT <= 3600:
    raise ImproperlyConfigured(
        f"POWERCONTEXT_OPENAI_TIMEOUT must be seconds in (0, 3600], got {_openai_timeout!r}"
    )
