"""gunicorn settings read from the working directory (``gunicorn powercontext.wsgi`` run from the
repository root). Command-line options still win."""

from typing import Any


def post_worker_init(worker: Any) -> None:
    """Load the embedding model in each worker once it has loaded the application (with or
    without ``--preload``: the model is per process), so the worker's first prepare is as fast
    as the rest."""
    from powercontext.search import embedding

    embedding.warm_up()
