"""Source capture: idempotent by (scope, source type, source id), never overwritten.

Content is redacted before it is stored (``powercontext.core.redaction_detectors``): a secret in
a captured session never reaches the database, its backups, the admin or the Review Inbox's
evidence panel, and the evidence a reviewer sees is exactly what was stored and what the
pipeline read. The idempotency digest is taken over the redacted content, so no hash of a
secret is kept either (docs/redaction.md). Each row records the detector version that redacted it
(``REDACTION_VERSION``); reads serve the stored text and never run a detector, and rows of an
older version are redacted again by ``sources_redact_stored`` (a Celery sweep and a command).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F

from powercontext.core.exceptions import SourceConflict
from powercontext.core.models import LOCAL_OWNER, ScopeState, Source
from powercontext.core.redaction_detectors import REDACTION_VERSION, redact
from powercontext.core.secret_door import redact_strings

CONTENT_SOURCE_TYPE = "content"


@dataclass(frozen=True)
class CapturedSource:
    source_type: str
    source_id: str
    position: int
    created: bool


def _digest(content: str, metadata: dict[str, Any] | None) -> str:
    """Identity of a capture: its content and its metadata (canonical JSON)."""
    canonical = json.dumps(metadata, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{content}\0{canonical}".encode()).hexdigest()


def _next_position(scope_id: str) -> int:
    """Allocate the scope's next Source position; the row update serializes concurrent captures."""
    updated = ScopeState.objects.filter(scope_id=scope_id).update(
        last_source_position=F("last_source_position") + 1
    )
    if not updated:
        ScopeState.objects.bulk_create([ScopeState(scope_id=scope_id)], ignore_conflicts=True)
        ScopeState.objects.filter(scope_id=scope_id).update(
            last_source_position=F("last_source_position") + 1
        )
    return ScopeState.objects.values_list("last_source_position", flat=True).get(scope_id=scope_id)


def source_capture(
    *,
    scope_id: str,
    source_id: str,
    content: str,
    metadata: dict[str, Any] | None,
    source_type: str = CONTENT_SOURCE_TYPE,
    captured_by: str = LOCAL_OWNER,
) -> CapturedSource:
    """Capture one Source.

    ``captured_by`` is the capturing caller's ``owner_key``: a session's history (session
    recovery) is the sources its reader captured. A retry by another caller does not change it.

    The same ``(scope, source_type, source_id)`` with the same content and metadata returns the existing
    Source and its position (idempotent retry); with anything different it raises
    ``SourceConflict`` and changes nothing. ``content`` and every string value of ``metadata``
    are stored redacted (``core.secret_door``); two captures that differ only in a secret are the
    same capture.
    """
    content = redact(content).text
    metadata = redact_strings(metadata)
    digest = _digest(content, metadata)
    existing = _existing(scope_id, source_type, source_id)
    if existing is not None:
        return _same_or_conflict(existing, digest)
    try:
        with transaction.atomic(durable=True):
            existing = _existing(scope_id, source_type, source_id)
            if existing is not None:
                return _same_or_conflict(existing, digest)
            position = _next_position(scope_id)
            Source.objects.create(
                scope_id=scope_id,
                source_type=source_type,
                source_id=source_id,
                content=content,
                content_sha256=digest,
                metadata=metadata,
                position=position,
                captured_by=captured_by,
                redaction_version=REDACTION_VERSION,
            )
    except IntegrityError:
        # A concurrent capture of the same id committed first (PostgreSQL): answer as a retry.
        existing = _existing(scope_id, source_type, source_id)
        if existing is None:
            raise
        return _same_or_conflict(existing, digest)
    return CapturedSource(source_type=source_type, source_id=source_id, position=position, created=True)


def _existing(scope_id: str, source_type: str, source_id: str) -> Source | None:
    return (
        Source.objects.filter(scope_id=scope_id, source_type=source_type, source_id=source_id)
        .only("source_type", "source_id", "position", "content_sha256")
        .first()
    )


def _same_or_conflict(existing: Source, digest: str) -> CapturedSource:
    if existing.content_sha256 != digest:
        raise SourceConflict()
    return CapturedSource(
        source_type=existing.source_type,
        source_id=existing.source_id,
        position=existing.position,
        created=False,
    )


@dataclass(frozen=True)
class StoredRedaction:
    """What one ``sources_redact_stored`` run did: rows redacted again (``checked``), rows whose
    text changed (``changed``), and whether no row of an older version is left (``done``)."""

    checked: int
    changed: int
    done: bool


def sources_redact_stored(*, batch: int = 200, max_batches: int | None = None) -> StoredRedaction:
    """Redact again the Sources stored under an older detector version (``redaction_version <
    REDACTION_VERSION``; 0 for rows stored before versions, some of them before capture redacted
    at all), oldest first, ``batch`` rows at a time and at most ``max_batches`` batches (None: all).

    Each batch is redacted outside any transaction (the detectors are the slow part) and written
    in one transaction: every row gets the current version, and a row whose text changed also
    gets the redacted text and its digest over it, so a retried capture of the original stays
    idempotent. The write is a compare-and-swap on the version read, so two concurrent runs
    never write one row twice. The one maintenance write that rewrites a Source (``manage.py
    redact_sources``, the ``powercontext.redact_stale_sources`` task)."""
    checked = changed = 0
    after = 0
    batches = 0
    while max_batches is None or batches < max_batches:
        rows = list(
            Source.objects.filter(pk__gt=after, redaction_version__lt=REDACTION_VERSION)
            .order_by("pk")
            .values_list("pk", "redaction_version", "content", "metadata")[:batch]
        )
        if not rows:
            return StoredRedaction(checked=checked, changed=changed, done=True)
        redone = [
            (pk, version, content, redact(content).text, metadata) for pk, version, content, metadata in rows
        ]
        with transaction.atomic(durable=True):
            for pk, version, content, redacted, metadata in redone:
                fields: dict[str, Any] = {"redaction_version": REDACTION_VERSION}
                if redacted != content:
                    fields.update(content=redacted, content_sha256=_digest(redacted, metadata))
                if Source.objects.filter(pk=pk, redaction_version=version).update(**fields):
                    checked += 1
                    changed += redacted != content
        after = rows[-1][0]
        batches += 1
    done = not Source.objects.filter(pk__gt=after, redaction_version__lt=REDACTION_VERSION).exists()
    return StoredRedaction(checked=checked, changed=changed, done=done)
