"""Memory writes: remember, revise, retire.

Memory is one Artifact per scope (family ``memory``, artifact id ``memory``). Each write is one
transaction that locks the scope's Memory head, creates exactly one new Memory revision, and
touches only the entries it changes: it closes and opens membership intervals, inserts immutable
entry versions, records the change list on the revision, maintains the search index, and moves
the head by compare-and-swap. Nothing here copies the manifest. Every text and reason passes the
redaction door (``powercontext.core.secret_door``) before it is stored or digested.
"""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from dataclasses import dataclass

from django.db import transaction

from powercontext import search
from powercontext.core.exceptions import (
    InvariantFailure,
    MemoryEntryInactive,
    MemoryNotFound,
    RevisionConflict,
)
from powercontext.core.models import (
    MEMORY_ARTIFACT_ID,
    MEMORY_FAMILY,
    Artifact,
    MemoryEntry,
    MemoryEntryVersion,
    MemoryMembership,
)
from powercontext.core.secret_door import redact_text
from powercontext.core.transactions import require_transaction
from powercontext.memory.artifacts import artifact_head_lock, artifact_revision_create
from powercontext.memory.selectors import EntryView, entry_view, find_membership


@dataclass(frozen=True)
class Citation:
    family: str
    artifact_id: str
    revision: int
    entry_id: str
    entry_version_id: str


@dataclass(frozen=True)
class MemoryMutation:
    """The head after a write and the entry it wrote (None: the write was a no-op)."""

    revision: int
    entry: EntryView | None


def content_digest(kind: str, text: str) -> str:
    return hashlib.sha256(f"{kind}\0{text}".encode()).hexdigest()


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def _lock_head(scope_id: str, *, create: bool) -> Artifact | None:
    return artifact_head_lock(
        scope_id=scope_id, family=MEMORY_FAMILY, artifact_id=MEMORY_ARTIFACT_ID, create=create
    )


def _commit_revision(head: Artifact, changes: list[dict[str, str | None]]) -> int:
    """Write the next immutable Memory revision (its change list) through the artifact kernel."""
    return artifact_revision_create(
        head=head, expected_revision=head.current_revision, content={"changes": changes}
    )


def _change(
    op: str, entry_id: str, before: str | None, after: str | None, reason: str | None
) -> dict[str, str | None]:
    return {
        "op": op,
        "entry_id": entry_id,
        "from_entry_version_id": before,
        "to_entry_version_id": after,
        "reason": reason,
    }


@transaction.atomic(durable=True)
def memory_remember(
    *,
    scope_id: str,
    kind: str,
    text: str,
    reason: str | None = None,
    expected_revision: int | None = None,
    source_refs: list[dict[str, str]] | None = None,
) -> MemoryMutation:
    """Add one entry as the next Memory revision of the scope.

    ``text`` must already be normalized (NFC, stripped, non-blank, <= 8192 UTF-8 bytes).
    Raises ``RevisionConflict`` when ``expected_revision`` is given and is not the current head
    revision (0 heads: any expected revision conflicts). ``source_refs`` are the exact source
    references (``{"name", "source_id"}``) the entry version keeps as its provenance.
    """
    text, reason = redact_text(text), redact_text(reason)
    head = _lock_head(scope_id, create=True)
    if head is None:  # pragma: no cover - the insert above guarantees the row
        raise InvariantFailure()
    if expected_revision is not None and expected_revision != head.current_revision:
        raise RevisionConflict(
            details={"expected_revision": expected_revision, "current_revision": head.current_revision}
        )
    digest = content_digest(kind, text)
    if _active_duplicate(scope_id, digest):
        # Remembering what the head already holds is a successful no-op: no revision, no entry.
        return MemoryMutation(revision=head.current_revision, entry=None)
    new = head.current_revision + 1
    membership, entry, version = _add_entry(scope_id, kind, text, digest, reason, source_refs or [], new)
    committed = _commit_revision(
        head, [_change("add", entry.entry_id, None, version.entry_version_id, reason)]
    )
    return MemoryMutation(revision=committed, entry=entry_view(membership, version, entry, committed))


def _active_duplicate(scope_id: str, digest: str) -> bool:
    """Whether the head holds an active entry with this content.

    Versions with this content (almost always none) first, by their own index; only then
    whether one of them is active in the head. Costs O(1), whatever the size of the head.
    """
    same_content = list(
        MemoryEntryVersion.objects.filter(scope_id=scope_id, content_sha256=digest).values_list(
            "pk", flat=True
        )
    )
    return bool(same_content) and (
        MemoryMembership.objects.filter(
            entry_version_id__in=same_content, to_revision__isnull=True, state=MemoryMembership.State.ACTIVE
        ).exists()
    )


def _add_entry(
    scope_id: str,
    kind: str,
    text: str,
    digest: str,
    reason: str | None,
    source_refs: list[dict[str, str]],
    new: int,
) -> tuple[MemoryMembership, MemoryEntry, MemoryEntryVersion]:
    """Insert a new entry, its first version and its open membership at revision ``new``."""
    entry = MemoryEntry.objects.create(scope_id=scope_id, entry_id=_new_id("mem_ent"), created_revision=new)
    version = MemoryEntryVersion.objects.create(
        entry=entry,
        scope_id=scope_id,
        entry_version_id=_new_id("mem_ver"),
        version=1,
        kind=kind,
        text=text,
        content_sha256=digest,
        reason=reason,
        source_refs=source_refs,
        created_revision=new,
    )
    membership = MemoryMembership.objects.create(
        scope_id=scope_id,
        entry=entry,
        entry_version=version,
        state=MemoryMembership.State.ACTIVE,
        from_revision=new,
    )
    search.index_memberships([(membership, text)])
    return membership, entry, version


def _locked_membership(scope_id: str, citation: Citation) -> tuple[Artifact, MemoryMembership]:
    """Resolve a citation that must name the current head, under the head lock."""
    if citation.family != MEMORY_FAMILY or citation.artifact_id != MEMORY_ARTIFACT_ID:
        raise MemoryNotFound()
    head = _lock_head(scope_id, create=False)
    if head is None or head.current_revision == 0:
        raise MemoryNotFound()
    if citation.revision != head.current_revision:
        raise RevisionConflict(
            details={"expected_revision": citation.revision, "current_revision": head.current_revision}
        )
    membership = find_membership(
        scope_id=scope_id,
        entry_id=citation.entry_id,
        entry_version_id=citation.entry_version_id,
        revision=None,
    )
    if membership is None:
        raise MemoryNotFound()
    return head, membership


def _replace_membership(
    membership: MemoryMembership, version: MemoryEntryVersion, state: str, revision: int
) -> MemoryMembership:
    """Close ``membership`` at ``revision`` and open the entry's next interval there, keeping
    the search index in step (only active memberships are indexed)."""
    search.unindex_memberships([membership.pk])
    closed = MemoryMembership.objects.filter(pk=membership.pk, to_revision__isnull=True).update(
        to_revision=revision
    )
    if closed != 1:  # the head lock makes this impossible; never write past a broken invariant
        raise InvariantFailure()
    opened = MemoryMembership.objects.create(
        scope_id=membership.scope_id,
        entry=membership.entry,
        entry_version=version,
        state=state,
        from_revision=revision,
    )
    if state == MemoryMembership.State.ACTIVE:
        search.index_memberships([(opened, version.text)])
    return opened


@transaction.atomic(durable=True)
def memory_revise(
    *, scope_id: str, citation: Citation, kind: str, text: str, reason: str | None = None
) -> MemoryMutation:
    """Replace an active entry's content with a new immutable version in a new revision.

    Raises ``MemoryNotFound`` (no Memory, or the entry version is not in the head),
    ``RevisionConflict`` (the citation names another revision than the head),
    ``MemoryEntryInactive`` (the entry is retired). Identical content is a no-op.
    """
    return memory_revise_within(scope_id=scope_id, citation=citation, kind=kind, text=text, reason=reason)


def memory_revise_within(
    *, scope_id: str, citation: Citation, kind: str, text: str, reason: str | None = None
) -> MemoryMutation:
    """``memory_revise`` inside the caller's transaction (asserted), for a caller that records
    what it did in the same transaction (a reviewer's decision on a reported entry)."""
    require_transaction("memory_revise_within")
    text, reason = redact_text(text), redact_text(reason)
    head, membership = _locked_membership(scope_id, citation)
    if membership.state != MemoryMembership.State.ACTIVE:
        raise MemoryEntryInactive()
    previous = membership.entry_version
    digest = content_digest(kind, text)
    if previous.content_sha256 == digest:
        # Same content: nothing changes, the head stays where it is.
        return MemoryMutation(
            revision=head.current_revision,
            entry=entry_view(membership, previous, membership.entry, head.current_revision),
        )
    new = head.current_revision + 1
    version = MemoryEntryVersion.objects.create(
        entry=membership.entry,
        scope_id=scope_id,
        entry_version_id=_new_id("mem_ver"),
        version=previous.version + 1,
        kind=kind,
        text=text,
        content_sha256=digest,
        reason=reason,
        source_refs=previous.source_refs,
        artifact_refs=previous.artifact_refs,
        created_revision=new,
    )
    opened = _replace_membership(membership, version, MemoryMembership.State.ACTIVE, new)
    committed = _commit_revision(
        head,
        [
            _change(
                "revise",
                membership.entry.entry_id,
                previous.entry_version_id,
                version.entry_version_id,
                reason,
            )
        ],
    )
    return MemoryMutation(revision=committed, entry=entry_view(opened, version, membership.entry, committed))


@transaction.atomic(durable=True)
def memory_retire(*, scope_id: str, citation: Citation, reason: str | None = None) -> MemoryMutation:
    """Deactivate an active entry in a new revision; its versions and history stay readable.

    The entry keeps its current version, now with state ``inactive`` from the new revision on;
    retiring an inactive entry changes nothing. Raises like ``memory_revise`` (but never
    ``MemoryEntryInactive``).
    """
    return memory_retire_within(scope_id=scope_id, citation=citation, reason=reason)


def memory_retire_within(*, scope_id: str, citation: Citation, reason: str | None = None) -> MemoryMutation:
    """``memory_retire`` inside the caller's transaction (asserted)."""
    require_transaction("memory_retire_within")
    reason = redact_text(reason)
    head, membership = _locked_membership(scope_id, citation)
    version = membership.entry_version
    if membership.state != MemoryMembership.State.ACTIVE:
        # Retiring a retired entry is a successful no-op.
        return MemoryMutation(
            revision=head.current_revision,
            entry=entry_view(membership, version, membership.entry, head.current_revision),
        )
    new = head.current_revision + 1
    opened = _replace_membership(membership, version, MemoryMembership.State.INACTIVE, new)
    committed = _commit_revision(
        head,
        [_change("deactivate", membership.entry.entry_id, version.entry_version_id, None, reason)],
    )
    return MemoryMutation(revision=committed, entry=entry_view(opened, version, membership.entry, committed))


def memory_restore_within(
    *,
    scope_id: str,
    entry_id: str,
    expected_from_revision: int,
    entry_version_id: str,
    reason: str | None = None,
) -> MemoryMutation:
    """Make an earlier version of an entry its active one again, in a new Memory revision and
    inside the caller's transaction: the undo of a retire (the entry's own version, inactive ->
    active: change ``reactivate``) or of a revise (the replaced version back: change
    ``revise``). No version row is written: the old immutable version joins the head again, so
    its citation and everything said about it (feedback) hold again.

    A compare-and-swap on the entry, not the head (other entries may have changed meanwhile):
    the entry's current interval must have started at ``expected_from_revision`` (the revision
    the write being undone made). Raises ``MemoryNotFound`` (no such entry or version),
    ``RevisionConflict`` (the entry changed since).
    """
    require_transaction("memory_restore_within")
    reason = redact_text(reason)
    head = _lock_head(scope_id, create=False)
    if head is None or head.current_revision == 0:
        raise MemoryNotFound()
    membership = (
        MemoryMembership.objects.select_related("entry", "entry_version")
        .filter(scope_id=scope_id, entry__entry_id=entry_id, to_revision__isnull=True)
        .first()
    )
    version = MemoryEntryVersion.objects.filter(
        scope_id=scope_id, entry__entry_id=entry_id, entry_version_id=entry_version_id
    ).first()
    if membership is None or version is None:
        raise MemoryNotFound()
    if membership.from_revision != expected_from_revision:
        raise RevisionConflict(
            details={
                "expected_revision": expected_from_revision,
                "current_revision": membership.from_revision,
            }
        )
    active = membership.state == MemoryMembership.State.ACTIVE
    if active and membership.entry_version_id == version.pk:
        return MemoryMutation(
            revision=head.current_revision,
            entry=entry_view(membership, version, membership.entry, head.current_revision),
        )
    new = head.current_revision + 1
    opened = _replace_membership(membership, version, MemoryMembership.State.ACTIVE, new)
    op = "revise" if active else "reactivate"
    before = membership.entry_version.entry_version_id
    committed = _commit_revision(head, [_change(op, entry_id, before, version.entry_version_id, reason)])
    return MemoryMutation(revision=committed, entry=entry_view(opened, version, membership.entry, committed))


@dataclass(frozen=True)
class NewEntry:
    """One entry to remember in a multi-change revision (``key`` is the caller's own label)."""

    key: str
    kind: str
    text: str
    source_refs: list[dict[str, str]]


@dataclass(frozen=True)
class MemoryBatch:
    """The head after a multi-change write, the entry id each new key got (None: the head
    already held that content, nothing was added for it) and the entries actually retired."""

    revision: int | None
    added: dict[str, str | None]
    retired: list[str]


def memory_apply_changes(
    *, scope_id: str, remember: list[NewEntry], retire_entry_ids: list[str], reason: str | None = None
) -> MemoryBatch:
    """Remember several entries and retire several active entries as ONE Memory revision.

    Runs inside the caller's transaction (asserted), so a caller that records what it wrote
    (the pipeline's Phase 2) commits both or neither. Content the head already holds is
    skipped; unknown or already inactive entries are skipped; nothing left: no revision.
    """
    require_transaction("memory_apply_changes")
    reason = redact_text(reason)
    head = _lock_head(scope_id, create=bool(remember))
    if head is None:
        return MemoryBatch(revision=None, added={}, retired=[])
    new = head.current_revision + 1
    changes: list[dict[str, str | None]] = []
    added: dict[str, str | None] = {}
    seen: set[str] = set()
    for item in remember:
        item = dataclasses.replace(item, text=redact_text(item.text))
        digest = content_digest(item.kind, item.text)
        if digest in seen or _active_duplicate(scope_id, digest):
            added[item.key] = None
            continue
        seen.add(digest)
        _, entry, version = _add_entry(scope_id, item.kind, item.text, digest, reason, item.source_refs, new)
        added[item.key] = entry.entry_id
        changes.append(_change("add", entry.entry_id, None, version.entry_version_id, reason))
    open_active = (
        MemoryMembership.objects.filter(
            scope_id=scope_id,
            entry__entry_id__in=sorted(set(retire_entry_ids)),
            to_revision__isnull=True,
            state=MemoryMembership.State.ACTIVE,
        )
        .select_related("entry", "entry_version")
        .order_by("entry__entry_id")
    )
    retired: list[str] = []
    for membership in open_active:
        _replace_membership(membership, membership.entry_version, MemoryMembership.State.INACTIVE, new)
        retired.append(membership.entry.entry_id)
        changes.append(
            _change(
                "deactivate",
                membership.entry.entry_id,
                membership.entry_version.entry_version_id,
                None,
                reason,
            )
        )
    if not changes:
        return MemoryBatch(revision=head.current_revision or None, added=added, retired=[])
    return MemoryBatch(revision=_commit_revision(head, changes), added=added, retired=retired)
