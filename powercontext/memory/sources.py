"""Source capture: idempotent by (scope, source type, source id), never overwritten.

Content is redacted before it is stored (``powercontext.core.redaction_detectors``): a secret in
a captured session never reaches the database, its backups, the admin or the Review Inbox's
evidence panel, and the evidence a reviewer sees is exactly what was stored and what the
pipeline read. The idempotency digest is taken over the redacted content, so no hash of a
secret is kept either (docs/redaction.md).
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
from powercontext.core.redaction_detectors import redact
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


def sources_redact_stored(*, batch: int = 200) -> int:
    """Redact the Sources stored before capture redacted them (issue 20): each batch of rows in
    one transaction, oldest first; a row whose text redaction changes gets the redacted text and
    its digest over it, so a retried capture of the original stays idempotent. Returns how many
    rows changed. The one maintenance write that rewrites a Source (``manage.py
    redact_sources``); rows already redacted are read and left alone."""
    changed = 0
    after = 0
    while True:
        with transaction.atomic(durable=True):
            rows = list(
                Source.objects.select_for_update()
                .filter(pk__gt=after)
                .order_by("pk")
                .only("pk", "content", "metadata")[:batch]
            )
            if not rows:
                return changed
            for row in rows:
                content = redact(row.content).text
                if content != row.content:
                    Source.objects.filter(pk=row.pk).update(
                        content=content, content_sha256=_digest(content, row.metadata)
                    )
                    changed += 1
            after = rows[-1].pk
