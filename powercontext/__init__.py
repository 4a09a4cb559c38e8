"""PowerContext: the project package (settings, urls, wsgi/asgi, the Celery app); the domain apps
nest beside them, one folder per feature (docs/architecture.md)."""

import os

# The release (CHANGELOG.md); /health/detail reports it. Upgrade steps: docs/operators.md.
__version__ = "0.9.0"

# One BLAS thread per process, set before NumPy loads: the only BLAS work is one matrix-vector
# product per vector search (~0.2 ms at 10k entries), requests already run in parallel, and on
# busy cores OpenBLAS's own threads turned that product into 20-40 ms. An operator's value wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from powercontext.celery import app as celery_app  # noqa: E402

__all__ = ["__version__", "celery_app"]
