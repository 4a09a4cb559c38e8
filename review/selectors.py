"""Review reads: candidates for the API and the Inbox, approved Experience/Skill revisions."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from powercontext.exceptions import ArtifactNotFound, CandidateNotFound, InvalidRequest
from powercontext.models import ArtifactRevision
from review.models import Candidate


def candidate_get(*, scope_id: str, candidate_id: str) -> Candidate:
    candidate = (
        Candidate.objects.select_related("latest", "result_head")
        .filter(scope_id=scope_id, candidate_id=candidate_id)
        .first()
    )
    if candidate is None:
        raise CandidateNotFound()
    return candidate


def _encode_cursor(pk: int) -> str:
    return base64.urlsafe_b64encode(f"after:{pk}".encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> int:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
        prefix, _, value = raw.partition(":")
        if prefix != "after" or not value.isdigit():
            raise ValueError
        return int(value)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidRequest(
            details={
                "errors": [
                    {
                        "loc": ["body", "cursor"],
                        "msg": "Is not a cursor this server issued.",
                        "type": "cursor_invalid",
                    }
                ]
            }
        ) from None


@dataclass(frozen=True)
class CandidatePage:
    candidates: list[Candidate]
    next_cursor: str | None


def candidate_list(
    *, scope_id: str, status: str, family: str | None, cursor: str | None, limit: int
) -> CandidatePage:
    """Candidates of one scope in proposal order (oldest first), ``limit`` per page."""
    rows: QuerySet[Candidate] = Candidate.objects.filter(scope_id=scope_id, status=status)
    if family is not None:
        rows = rows.filter(family=family)
    if cursor is not None:
        rows = rows.filter(pk__gt=_decode_cursor(cursor))
    page = list(rows.select_related("latest", "result_head").order_by("pk")[: limit + 1])
    more = len(page) > limit
    page = page[:limit]
    return CandidatePage(candidates=page, next_cursor=_encode_cursor(page[-1].pk) if more and page else None)


def artifact_revision_get(*, scope_id: str, family: str, artifact_id: str, revision: int) -> ArtifactRevision:
    """An exact approved revision of an Experience or Skill in this scope."""
    found = ArtifactRevision.objects.filter(
        scope_id=scope_id, family=family, artifact_id=artifact_id, revision=revision
    ).first()
    if found is None:
        raise ArtifactNotFound()
    return found


def candidate_wire(candidate: Candidate) -> dict[str, Any]:
    """The wire ``ArtifactCandidate`` (all 11 keys, nullable ones as null)."""
    latest = candidate.latest
    assert latest is not None
    result = None
    if candidate.result_head is not None:
        result = {
            "family": candidate.result_head.family,
            "artifact_id": candidate.result_head.artifact_id,
            "revision": candidate.result_revision,
        }
    return {
        "candidate_id": candidate.candidate_id,
        "version": candidate.version,
        "family": candidate.family,
        "status": candidate.status,
        "proposal": latest.proposal,
        "source_refs": latest.source_refs,
        "artifact_refs": latest.artifact_refs,
        "target": latest.target,
        "reason": latest.reason,
        "result_artifact": result,
        "decision_reason": candidate.decision_reason,
    }
