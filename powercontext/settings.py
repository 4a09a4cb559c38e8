"""Settings for PowerContext, read from environment variables (see README "Configuration")."""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def _env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {raw!r}")


def _env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


DEBUG = _env_bool("DEBUG", False)
DATA_DIR = Path(os.environ.get("POWERCONTEXT_DATA_DIR", BASE_DIR / "data"))

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    # The embedded default must start with no configuration. The key only signs sessions and
    # CSRF tokens of the local Review Inbox; service deployments must set SECRET_KEY.
    SECRET_KEY = "powercontext-local-insecure-key-set-SECRET_KEY-in-service-mode"  # noqa: S105

ALLOWED_HOSTS = _env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = _env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "powercontext",
    "review",
    "context_api",
    "drf_spectacular_sidecar",  # self-hosted Redoc for /v1/docs
]

MIDDLEWARE = [
    "context_api.middleware.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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
# Unset DATABASE_URL: a SQLite file in DATA_DIR (the embedded default).
# postgres://user:pass@host:port/name: PostgreSQL through psycopg 3 (service mode).
DATABASE_URL = os.environ.get("DATABASE_URL", "").strip()
if DATABASE_URL:
    _db = dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)
    if _db["ENGINE"] not in {"django.db.backends.postgresql", "django.db.backends.sqlite3"}:
        raise ImproperlyConfigured("DATABASE_URL must be a postgres:// or sqlite:// URL")
else:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    _db = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(DATA_DIR / "powercontext.sqlite3")}

if _db["ENGINE"] == "django.db.backends.sqlite3":
    # Writers take the lock when the transaction begins (IMMEDIATE) and wait for it (busy
    # timeout) instead of failing with "database is locked" half way through; WAL lets readers
    # keep a consistent snapshot while one writer commits.
    _db.setdefault("OPTIONS", {})
    _db["OPTIONS"].update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": float(os.environ.get("POWERCONTEXT_SQLITE_TIMEOUT", "30")),
            # A larger page cache and memory-mapped reads keep index pages hot between requests
            # (the benchmark: p50 search at 100k entries 0.73 -> 0.39 ms on a cold connection).
            "init_command": (
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                f"PRAGMA cache_size=-{int(os.environ.get('POWERCONTEXT_SQLITE_CACHE_MB', '64')) * 1024}; "
                f"PRAGMA mmap_size={int(os.environ.get('POWERCONTEXT_SQLITE_MMAP_MB', '256')) * 1024 * 1024};"
            ),
        }
    )
    _db.setdefault("TEST", {})
    _db["TEST"].setdefault("NAME", str(DATA_DIR / "test-powercontext.sqlite3"))
DATABASES = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/review/"

# --- API ------------------------------------------------------------------------------------
# Bearer tokens: when POWERCONTEXT_REQUIRE_TOKEN is true every /v1 operation needs a valid
# token; otherwise a token is optional (and, when present, must be valid). Reviewer actions
# always need a reviewer token (see README).
POWERCONTEXT_REQUIRE_TOKEN = _env_bool("POWERCONTEXT_REQUIRE_TOKEN", False)
# Browser origins allowed to call the API (comma-separated, exact "scheme://host[:port]"). A request
# carrying any other Origin header is refused (403); requests without one (agents, hooks, curl)
# are not affected. Empty by default: no browser page may call /mcp.
POWERCONTEXT_ALLOWED_ORIGINS = _env_list("POWERCONTEXT_ALLOWED_ORIGINS", [])

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    # No OPTIONS metadata: the contract defines none, and it would expose class names.
    "DEFAULT_METADATA_CLASS": None,
    "EXCEPTION_HANDLER": "context_api.errors.exception_handler",
}

# --- Celery ---------------------------------------------------------------------------------
# Unset CELERY_BROKER_URL: tasks run eagerly in-process. Set (redis://...): real workers.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "").strip()
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", CELERY_BROKER_URL or None)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_TIME_LIMIT = int(os.environ.get("CELERY_TASK_TIME_LIMIT", "3600"))
CELERY_TASK_SOFT_TIME_LIMIT = int(os.environ.get("CELERY_TASK_SOFT_TIME_LIMIT", "3300"))
CELERY_WORKER_PREFETCH_MULTIPLIER = 1

# --- Logging --------------------------------------------------------------------------------
# Nothing untrusted (queries, snippets, scope ids, entry ids, bodies) is ever logged; the
# request logger writes method, route name, status and latency only.
LOG_LEVEL = os.environ.get("LOG_LEVEL", "INFO").upper()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        # Django's own request logger prints the path of failed requests; ours logs the route.
        "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
        # runserver's own request lines carry query strings (Inbox filters hold scope ids);
        # powercontext.access logs every request by route name instead.
        "django.server": {"handlers": ["console"], "level": "CRITICAL", "propagate": False},
    },
}
