"""Wire shapes of responses (closed objects: exactly the contract's keys)."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from powercontext.core.models import MEMORY_ARTIFACT_ID, MEMORY_FAMILY, ArtifactRevision
from powercontext.memory.selectors import EntryView, SearchResult
from review.models import Candidate


def memory_ref(revision: int | None) -> dict[str, Any] | None:
    if revision is None:
        return None
    return {"family": MEMORY_FAMILY, "artifact_id": MEMORY_ARTIFACT_ID, "revision": revision}


def citation(revision: int | None, entry_id: str, entry_version_id: str) -> dict[str, Any]:
    return {"memory_ref": memory_ref(revision), "entry_id": entry_id, "entry_version_id": entry_version_id}


def _refs(cites: Any) -> dict[str, Any]:
    """The evidence an entry version, a candidate version or an artifact revision cites."""
    return {"source_refs": cites.source_refs, "artifact_refs": cites.artifact_refs}


def memory_entry(entry: EntryView) -> dict[str, Any]:
    return {
        "citation": citation(entry.revision, entry.entry_id, entry.entry_version_id),
        "version": entry.version,
        "kind": entry.kind,
        "text": entry.text,
        "state": entry.state,
        **_refs(entry),
    }


def memory_mutation(revision: int, entry: EntryView | None) -> dict[str, Any]:
    return {"memory": memory_ref(revision), "entry": memory_entry(entry) if entry is not None else None}


def memory_search(result: SearchResult) -> dict[str, Any]:
    return {
        "memory": memory_ref(result.revision),
        "mode": result.mode if result.revision is not None else None,
        "hits": [
            {
                "citation": citation(hit.revision, hit.entry_id, hit.entry_version_id),
                "text": hit.text,
                "score": hit.score,
                "matched_by": list(hit.matched_by),
            }
            for hit in result.hits
        ],
    }


def artifact_ref(family: str, artifact_id: str, revision: int | None) -> dict[str, Any]:
    return {"family": family, "artifact_id": artifact_id, "revision": revision}


def candidate(candidate: Candidate) -> dict[str, Any]:
    """The wire ``ArtifactCandidate`` (all 11 keys, nullable ones as null)."""
    latest = candidate.latest
    assert latest is not None
    head = candidate.result_head
    return {
        "candidate_id": candidate.candidate_id,
        "version": candidate.version,
        "family": candidate.family,
        "status": candidate.status,
        "proposal": latest.proposal,
        **_refs(latest),
        "target": latest.target,
        "reason": latest.reason,
        "result_artifact": (
            artifact_ref(head.family, head.artifact_id, candidate.result_revision)
            if head is not None
            else None
        ),
        "decision_reason": candidate.decision_reason,
    }


def thread_entry(entry: Any) -> dict[str, Any]:
    """One reviewer entry of a candidate's thread (``review.selectors.thread.ThreadComment``)."""
    return {
        "kind": entry.kind,
        "version": entry.version,
        "comment": entry.comment,
        "field_comments": {field.name: field.text for field in entry.fields},
        "created_at": entry.at.isoformat().replace("+00:00", "Z"),
    }


def candidate_thread(candidate_row: Candidate, thread: list[Any]) -> dict[str, Any]:
    """The wire ``ArtifactCandidateThread``: the candidate (its status may be
    ``changes_requested``) and its thread, oldest first."""
    return {"candidate": candidate(candidate_row), "thread": [thread_entry(entry) for entry in thread]}


def artifact_revision(revision: ArtifactRevision) -> dict[str, Any]:
    """The wire body of ``get_experience`` / ``get_skill``."""
    return {
        "artifact": artifact_ref(revision.family, revision.artifact_id, revision.revision),
        "content": revision.content,
        **_refs(revision),
    }


def encode_cursor(pk: int, prefix: str) -> str:
    """An opaque page cursor for the keyset position ``pk``."""
    return base64.urlsafe_b64encode(f"{prefix}{pk}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str, prefix: str) -> int | None:
    """The keyset position of a cursor this server issued (None for anything else)."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None
    value = raw.removeprefix(prefix)
    if value == raw or not value.isdigit():
        return None
    return int(value)
