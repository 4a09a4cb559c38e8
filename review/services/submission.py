"""What a proposal or a revision submits, and the evidence rules it must meet before it is stored."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from powercontext.core.exceptions import ArtifactConflict, InvalidRequest
from powercontext.core.models import Artifact, ArtifactRevision, Source
from powercontext.memory.artifacts import head_ref

MAX_EVIDENCE = 32


@dataclass(frozen=True)
class Submission:
    """A complete proposal with its evidence, as proposed or revised (already schema-valid)."""

    proposal: dict[str, Any]
    source_refs: list[dict[str, Any]]
    artifact_refs: list[dict[str, Any]]
    target: dict[str, Any] | None
    reason: str | None


def invalid(loc: list[str | int], msg: str, kind: str = "value_error") -> InvalidRequest:
    return InvalidRequest(details={"errors": [{"loc": ["body", *loc], "msg": msg, "type": kind}]})


def exact_ref(ref: dict[str, Any]) -> dict[str, Any]:
    return {"family": ref["family"], "artifact_id": ref["artifact_id"], "revision": ref["revision"]}


def check_evidence(scope_id: str, family: str, submission: Submission) -> None:
    """Evidence: 1..32 exact references, all existing in this scope; a target must be the latest
    revision of an existing Artifact of the candidate's family and be part of the evidence."""
    total = len(submission.source_refs) + len(submission.artifact_refs)
    if total < 1 or total > MAX_EVIDENCE:
        raise invalid([], f"Evidence must hold 1 to {MAX_EVIDENCE} references in total.", "evidence_count")
    for index, ref in enumerate(submission.source_refs):
        if not Source.objects.filter(
            scope_id=scope_id, source_type=ref["name"], source_id=ref["source_id"]
        ).exists():
            raise invalid(["source_refs", index], "No such Source in this scope.", "evidence_missing")
    for index, ref in enumerate(submission.artifact_refs):
        exists = ArtifactRevision.objects.filter(
            scope_id=scope_id, family=ref["family"], artifact_id=ref["artifact_id"], revision=ref["revision"]
        ).exists()
        if not exists:
            raise invalid(
                ["artifact_refs", index], "No such Artifact revision in this scope.", "evidence_missing"
            )
    target = submission.target
    if target is None:
        return
    if target["family"] != family:
        raise invalid(
            ["target", "family"], "The target must be an Artifact of the candidate's family.", "target_family"
        )
    if exact_ref(target) not in [exact_ref(r) for r in submission.artifact_refs]:
        raise invalid(
            ["target"], "The target must also be listed in artifact_refs.", "target_not_in_evidence"
        )
    head = Artifact.objects.filter(
        scope_id=scope_id, family=family, artifact_id=target["artifact_id"]
    ).first()
    if head is None or head.current_revision < 1:
        raise invalid(["target"], "The target Artifact does not exist in this scope.", "target_missing")
    if head.current_revision != target["revision"]:
        raise ArtifactConflict(details={"current": head_ref(head)})
