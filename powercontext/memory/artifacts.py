"""The artifact kernel: the one way an artifact revision comes to exist and a head moves.

Memory writes (remember / revise / retire) and review approvals both end here. Every function
must run inside the caller's transaction (they assert it): the caller owns the unit of work
(entry versions, memberships, candidate state, decisions) and this module owns the revision
and the head.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User

from powercontext import search
from powercontext.core.exceptions import ArtifactConflict, RevisionConflict
from powercontext.core.families import Family
from powercontext.core.models import Artifact, ArtifactRevision
from powercontext.core.recall import is_recallable
from powercontext.core.transactions import compare_and_swap, require_transaction
from powercontext.search.fulltext import analyzer


@dataclass(frozen=True)
class Refs:
    """Evidence an artifact revision was built from (exact references, as on the wire)."""

    source_refs: list[dict[str, Any]] = field(default_factory=list)
    artifact_refs: list[dict[str, Any]] = field(default_factory=list)


def head_ref(head: Artifact) -> dict[str, Any]:
    return {"family": head.family, "artifact_id": head.artifact_id, "revision": head.current_revision}


def artifact_head_lock(
    *, scope_id: str, family: str, artifact_id: str, create: bool = False
) -> Artifact | None:
    """Lock an artifact's head row for the rest of the transaction (creating it when asked).

    On PostgreSQL the row lock serializes writers of one head; on SQLite the IMMEDIATE
    transaction already holds the database write lock.
    """
    require_transaction("artifact writes")
    heads = Artifact.objects.select_for_update().filter(
        scope_id=scope_id, family=family, artifact_id=artifact_id
    )
    head = heads.first()
    if head is None and create:
        Artifact.objects.bulk_create(
            [Artifact(scope_id=scope_id, family=family, artifact_id=artifact_id)], ignore_conflicts=True
        )
        head = heads.first()
    return head


def artifact_head_create(*, scope_id: str, family: str, prefix: str) -> Artifact:
    """A new, empty head (revision 0) with a fresh artifact id."""
    require_transaction("artifact writes")
    return Artifact.objects.create(
        scope_id=scope_id, family=family, artifact_id=f"{prefix}_{uuid.uuid4().hex}"
    )


def conflict_for(head: Artifact, expected_revision: int) -> ArtifactConflict | RevisionConflict:
    """The conflict a caller gets when ``head`` is not at ``expected_revision`` (Memory speaks
    in revisions, reviewed families in artifact references)."""
    if head.family == Family.MEMORY:
        return RevisionConflict(
            details={"expected_revision": expected_revision, "current_revision": head.current_revision}
        )
    return ArtifactConflict(details={"current": head_ref(head)})


def _before_head_move() -> None:
    """A seam for tests: runs right before the compare-and-swap of the head."""


def artifact_revision_create(
    *,
    head: Artifact,
    expected_revision: int,
    content: dict[str, Any],
    refs: Refs | None = None,
    created_by: User | None = None,
    searchable_text: str | None = None,
) -> int:
    """Move ``head`` from ``expected_revision`` to the next revision and insert that revision.

    The head moves by compare-and-swap on ``current_revision`` and the row count is checked, so
    a concurrent writer that moved the head first makes this raise a conflict
    (``RevisionConflict`` for Memory, ``ArtifactConflict`` otherwise) before anything of this
    revision is written; the caller's transaction then rolls back its own rows too. The
    revision row is insert-only, with its parent as lineage. With ``searchable_text`` the head's
    search text and its index row are written in the same transaction (approved Experience), and
    the revision row keeps that text for the audit. The same update sets ``recallable``.
    Returns the new revision number and updates ``head`` in place.
    """
    require_transaction("artifact writes")
    new = expected_revision + 1
    changes: dict[str, Any] = {"current_revision": new, "state": Artifact.State.ACTIVE}
    if searchable_text is not None:
        changes["searchable_text"] = searchable_text
        changes["analyzer_version"] = analyzer.ANALYZER_VERSION if searchable_text else 0
    changes["recallable"] = is_recallable(
        family=head.family,
        state=Artifact.State.ACTIVE,
        current_revision=new,
        searchable_text=changes.get("searchable_text", head.searchable_text),
    )
    _before_head_move()
    if not compare_and_swap(
        Artifact, match={"pk": head.pk, "current_revision": expected_revision}, changes=changes
    ):
        head.refresh_from_db()
        raise conflict_for(head, expected_revision)
    refs = refs or Refs()
    ArtifactRevision.objects.create(
        head=head,
        scope_id=head.scope_id,
        family=head.family,
        artifact_id=head.artifact_id,
        revision=new,
        parent_revision=expected_revision or None,
        content=content,
        source_refs=refs.source_refs,
        artifact_refs=refs.artifact_refs,
        searchable_text=searchable_text or "",
        created_by=created_by,
    )
    for name, value in changes.items():
        setattr(head, name, value)
    if searchable_text is not None:
        search.index_experience_head(head)
    return new


def artifact_head_retire(*, head: Artifact) -> None:
    """Retire ``head`` (locked by the caller): its state and ``recallable`` change in one update
    and a recalled head leaves the Experience index in the same transaction."""
    require_transaction("artifact writes")
    Artifact.objects.filter(pk=head.pk).update(state=Artifact.State.RETIRED, recallable=False)
    was_recallable = head.recallable
    head.state, head.recallable = Artifact.State.RETIRED, False
    if was_recallable:
        search.index_experience_head(head)
