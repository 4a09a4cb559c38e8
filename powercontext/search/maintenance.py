"""Index maintenance inside the writers' transactions: the full-text rows and the vectors.

Services that change what an index should hold call these in their own transaction, so an index
row appears and disappears with the authoritative row it derives from. Vectors are embedded
there too (``POWERCONTEXT_EMBED_WRITES=sync``) or, by default, after the writer's commit: its
scope's embedder is signalled then (``signal_after_commit``; ``vectors.pending``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable

from django.conf import settings
from django.db import transaction

from powercontext.core import broker
from powercontext.core.models import (
    Artifact,
    ExperienceSearchDocument,
    ExperienceVector,
    MemoryMembership,
    MemorySearchDocument,
)
from powercontext.search import tasks
from powercontext.search.fulltext import analyzer
from powercontext.search.fulltext.engines import engine
from powercontext.search.vectors import pending
from powercontext.search.vectors.vector_index import (
    add_experience_vector,
    add_vectors,
    remove_vectors_of_memberships,
)

logger = logging.getLogger("powercontext.search")


def index_memberships(items: Iterable[tuple[MemoryMembership, str]]) -> None:
    """Add index rows for active memberships; ``items`` pairs each membership with its text.

    Vectors: with ``POWERCONTEXT_EMBED_WRITES=sync`` each membership's entry version is embedded
    here, in the writer's transaction, when the model is available (skipped, never an error, when
    it is not). With ``async`` (the default) nothing is embedded here: the scope's embedder is
    signalled after commit and fills the gap (``vectors.pending``)."""
    items = list(items)
    db = engine()
    documents = []
    for membership, text in items:
        stored, length = db.document(membership.scope_id, analyzer.analyze(text))
        documents.append(
            MemorySearchDocument(
                membership_id=membership.pk, scope_id=membership.scope_id, terms=stored, length=length
            )
        )
    MemorySearchDocument.objects.bulk_create(documents)
    if pending.is_async():
        for scope_id in sorted({m.scope_id for m, _ in items}):
            signal_after_commit(scope_id)
    else:
        add_vectors((m.entry_version_id, m.scope_id, text) for m, text in items)


def unindex_memberships(membership_ids: Iterable[int]) -> None:
    ids = list(membership_ids)
    if ids:
        remove_vectors_of_memberships(ids)
        MemorySearchDocument.objects.filter(membership_id__in=ids).delete()


def index_experience_head(head: Artifact) -> None:
    """Make the Experience index rows of ``head`` match its current ``searchable_text``.

    The head's vector (of an older revision, or of a head no longer recallable) is deleted here;
    a recallable head gets its new one here (``sync``) or from the embedder after commit."""
    ExperienceSearchDocument.objects.filter(head_id=head.pk).delete()
    ExperienceVector.objects.filter(head_id=head.pk).delete()
    if head.recallable:
        stored, length = engine().document(head.scope_id, head.searchable_text.split())
        ExperienceSearchDocument.objects.create(
            head_id=head.pk, scope_id=head.scope_id, terms=stored, length=length
        )
        if pending.is_async():
            signal_after_commit(head.scope_id)
        else:
            add_experience_vector(head)


# -- signals (after the writer's commit) -----------------------------------------------------------


def signal_after_commit(scope_id: str) -> None:
    """Inside a writer's transaction: ask for the scope's vectors once it has committed."""
    transaction.on_commit(lambda: _dispatch(scope_id))


def _dispatch(scope_id: str) -> None:
    # After commit, on the writer's thread: cheap (no model, no query), and never raises, since
    # the write has already succeeded and the gap is recorded in the database anyway.
    try:
        if settings.CELERY_TASK_ALWAYS_EAGER:
            pending.worker().submit(scope_id)
        else:
            _enqueue(scope_id)
    except Exception as exc:
        logger.warning("embed_signal failed error_class=%s", type(exc).__name__)


_sent_lock = threading.Lock()
_sent: dict[str, float] = {}


def _enqueue(scope_id: str) -> None:
    window = float(settings.POWERCONTEXT_EMBED_COALESCE_SECONDS)
    now = time.monotonic()
    with _sent_lock:
        if now - _sent.get(scope_id, float("-inf")) < window:
            return  # a task sent less than a window ago, or the sweep, covers this commit
        _sent[scope_id] = now
        if len(_sent) > 10_000:
            for key in [k for k, at in _sent.items() if now - at >= window]:
                del _sent[key]
    broker.publish(tasks.embed_pending, (scope_id,))
