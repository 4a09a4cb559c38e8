"""Index maintenance inside the writers' transactions.

Services that change what an index should hold call these in their own transaction, so an index
row appears and disappears with the authoritative row it derives from.
"""

from __future__ import annotations

from collections.abc import Iterable

from powercontext.core.models import (
    Artifact,
    ExperienceSearchDocument,
    ExperienceVector,
    MemoryMembership,
    MemorySearchDocument,
)
from powercontext.search import analyzer, pending
from powercontext.search.engines import engine
from powercontext.search.vectors import add_experience_vector, add_vectors, remove_vectors_of_memberships


def index_memberships(items: Iterable[tuple[MemoryMembership, str]]) -> None:
    """Add index rows for active memberships; ``items`` pairs each membership with its text.

    Vectors: with ``POWERCONTEXT_EMBED_WRITES=sync`` each membership's entry version is embedded
    here, in the writer's transaction, when the model is available (skipped, never an error, when
    it is not). With ``async`` (the default) nothing is embedded here: the scope's embedder is
    signalled after commit and fills the gap (``search.pending``)."""
    items = list(items)
    db = engine()
    documents = []
    for membership, text in items:
        terms = analyzer.analyze(text)
        documents.append(
            MemorySearchDocument(
                membership_id=membership.pk,
                scope_id=membership.scope_id,
                terms=db.document_terms(membership.scope_id, terms),
                length=len(terms),
            )
        )
    MemorySearchDocument.objects.bulk_create(documents)
    if pending.is_async():
        for scope_id in sorted({m.scope_id for m, _ in items}):
            pending.signal_after_commit(scope_id)
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
        terms = head.searchable_text.split()
        ExperienceSearchDocument.objects.create(
            head_id=head.pk,
            scope_id=head.scope_id,
            terms=engine().document_terms(head.scope_id, terms),
            length=len(terms),
        )
        if pending.is_async():
            pending.signal_after_commit(head.scope_id)
        else:
            add_experience_vector(head)
