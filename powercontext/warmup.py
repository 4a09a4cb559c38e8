"""Get a fresh web process ready to answer at once (gunicorn ``post_worker_init``, runserver).

Before: each gunicorn worker loaded the embedding model (onnxruntime, ~1-2 s, longer on a busy
machine) before it accepted a request, and then paid for importing the URL configuration and
compiling templates on its first request: the first Inbox pages after a start took seconds.

Now the cheap part runs first, in the worker itself: the URL configuration (which imports the
API), the Inbox's and log-in's templates, and the hidden-character pattern every Inbox row is
checked against (built once per process from a walk over the Unicode code space). The model then loads in a background thread, so the
worker answers Inbox pages while it loads; a prepare that needs vectors before it has loaded waits
for it (``embedding.embedder()`` holds a lock), as it did before.

A gunicorn worker (``warm_up_worker``) waits for the model, then fills its per-scope caches for
the most recently active scopes (``preload_recent_scopes``; issue 19): recently prepared scopes
first, then recently written ones, at most ``POWERCONTEXT_PRELOAD_SCOPES`` of them, for at most
``POWERCONTEXT_PRELOAD_SECONDS``, vectors only while they fit in the vector cache's bound
(``powercontext/search/preload.py``). A failure there is logged and the worker starts anyway.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

from django.conf import settings
from django.db.models import Max
from django.template.loader import get_template
from django.urls import get_resolver
from django.utils import timezone

from powercontext.core import invisible

logger = logging.getLogger("powercontext.warmup")

# Prepares older than this do not make a scope "recently prepared" (writes still may).
RECENT_PREPARES = timedelta(days=1)

INBOX_TEMPLATES = (
    "registration/login.html",
    "review/queue.html",
    "review/candidate.html",
    "review/history.html",
    "review/revise.html",
    "review/conflict.html",
)


def warm_up_web() -> None:
    """Import the URL configuration, compile the Inbox templates (the cached loader keeps them)
    and build the hidden-character patterns: what a first request would otherwise pay for."""
    get_resolver().url_patterns  # noqa: B018 - the property imports every view module
    for name in INBOX_TEMPLATES:
        get_template(name)
    invisible.hidden_pattern()
    invisible.default_ignorable_pattern()


def warm_up_model_in_background() -> threading.Thread:
    """Load the embedding model (and run it once) without blocking the caller."""
    from powercontext.search.vectors import embedding

    thread = threading.Thread(target=embedding.warm_up, name="powercontext-model-warm-up", daemon=True)
    thread.start()
    return thread


def warm_up() -> threading.Thread:
    """``runserver``: the web part now, the model in the background."""
    warm_up_web()
    return warm_up_model_in_background()


def warm_up_worker() -> None:
    """A gunicorn worker, before it accepts its first request: the web part, then the model
    (and one run of it), then the recently active scopes' caches. The worker answers nothing
    until all are done, so neither its first Inbox page nor its first prepare pays for them
    (issue 19: the first prepare of a fresh worker within the hook's budget; issue 22: no first
    Inbox page that waits)."""
    from powercontext.search.vectors import embedding

    warm_up_web()
    embedding.warm_up()
    preload_recent_scopes()


def recent_scopes(limit: int) -> list[str]:
    """Up to ``limit`` scope ids, most recently active first: those prepared within
    ``RECENT_PREPARES`` (by their latest prepare aggregate), then the rest by their Memory head's
    latest write."""
    from powercontext.core.models import MEMORY_ARTIFACT_ID, MEMORY_FAMILY, Artifact
    from powercontext.prepare.models import PrepareAggregate

    if limit < 1:
        return []
    prepared = (
        PrepareAggregate.objects.filter(hour__gte=timezone.now() - RECENT_PREPARES)
        .values("scope_id")
        .annotate(last=Max("updated_at"))
        .order_by("-last", "scope_id")[:limit]
    )
    written = (
        Artifact.objects.filter(family=MEMORY_FAMILY, artifact_id=MEMORY_ARTIFACT_ID)
        .order_by("-updated_at", "scope_id")
        .values_list("scope_id", flat=True)[:limit]
    )
    return list(dict.fromkeys([*(row["scope_id"] for row in prepared), *written]))[:limit]


def preload_recent_scopes() -> None:
    """Fill the per-scope caches of the most recently active scopes (module docstring); logs what
    it did (counts only), never raises. Its database connection is left to the first request's
    ``close_old_connections`` (kept for that request while ``CONN_MAX_AGE`` allows)."""
    from powercontext.search import preload

    try:
        scopes = recent_scopes(settings.POWERCONTEXT_PRELOAD_SCOPES)
        report = preload.preload_scopes(scopes, settings.POWERCONTEXT_PRELOAD_SECONDS)
    except Exception as exc:  # a warm-up never stops the worker
        logger.warning("worker warm-up: choosing the scopes to preload failed (%s)", type(exc).__name__)
        return
    logger.info(
        "worker warm-up: preloaded %d scopes (%d with vectors, %d failed%s) in %.0f ms",
        report.scopes,
        report.with_vectors,
        report.failed,
        ", time limit reached" if report.timed_out else "",
        report.seconds * 1000,
    )
