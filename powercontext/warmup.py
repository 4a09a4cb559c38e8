"""Get a fresh web process ready to answer at once (gunicorn ``post_worker_init``, runserver).

Before: each gunicorn worker loaded the embedding model (onnxruntime, ~1-2 s, longer on a busy
machine) before it accepted a request, and then paid for importing the URL configuration and
compiling templates on its first request: the first Inbox pages after a start took seconds.

Now the cheap part runs first, in the worker itself: the URL configuration (which imports the
API), the Inbox's and log-in's templates, and the hidden-character pattern every Inbox row is
checked against (built once per process from a walk over the Unicode code space). The model then loads in a background thread, so the
worker answers Inbox pages while it loads; a prepare that needs vectors before it has loaded waits
for it (``embedding.embedder()`` holds a lock), as it did before.
"""

from __future__ import annotations

import threading

from django.template.loader import get_template
from django.urls import get_resolver

from powercontext.core import invisible

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
    from powercontext.search import embedding

    thread = threading.Thread(target=embedding.warm_up, name="powercontext-model-warm-up", daemon=True)
    thread.start()
    return thread


def warm_up() -> threading.Thread:
    """``runserver``: the web part now, the model in the background."""
    warm_up_web()
    return warm_up_model_in_background()


def warm_up_worker() -> None:
    """A gunicorn worker, before it accepts its first request: the web part, then the model
    (and one run of it). The worker answers nothing until both are done, so neither its first
    Inbox page nor its first prepare pays for them (issue 19: the first prepare of a fresh
    worker within the hook's budget; issue 22: no first Inbox page that waits)."""
    from powercontext.search import embedding

    warm_up_web()
    embedding.warm_up()
