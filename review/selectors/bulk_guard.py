"""Which selected rows a bulk approval leaves out unless the reviewer includes them explicitly:
items flagged for hidden characters or text (``queue.flagged_items``, as the candidate page
warns about them) and stale updates (the revision they target is no longer their Artifact's
head, so approving them as they stand cannot succeed: rebase first)."""

from __future__ import annotations

from typing import Any

from django.db.models import Q

from powercontext.core.models import Artifact
from review.models import CandidateVersion
from review.selectors.queue import flagged_items


def stale_items(items: list[tuple[int, int]]) -> set[tuple[int, int]]:
    """The ``(pk, version)`` items whose version is an update of a revision that is no longer the
    head (or of an Artifact that is gone). Two queries."""
    wanted = set(items)
    rows: list[tuple[int, int, dict[str, Any], str, str]] = [
        (pk, version, target, scope_id, family)
        for pk, version, target, scope_id, family in CandidateVersion.objects.filter(
            candidate_id__in={pk for pk, _ in wanted}, target__isnull=False
        ).values_list("candidate_id", "version", "target", "candidate__scope_id", "candidate__family")
        if (pk, version) in wanted and isinstance(target, dict)
    ]
    if not rows:
        return set()
    match = Q(pk__in=[])
    for _, _, target, scope_id, family in rows:
        match |= Q(scope_id=scope_id, family=family, artifact_id=str(target.get("artifact_id")))
    heads = {
        (scope_id, family, artifact_id): revision
        for scope_id, family, artifact_id, revision in Artifact.objects.filter(match).values_list(
            "scope_id", "family", "artifact_id", "current_revision"
        )
    }
    return {
        (pk, version)
        for pk, version, target, scope_id, family in rows
        if heads.get((scope_id, family, str(target.get("artifact_id")))) != target.get("revision")
    }


def held_back(items: list[tuple[int, int]]) -> dict[tuple[int, int], str]:
    """The items a bulk approval leaves out, each with why: ``flagged`` or ``stale``."""
    held = {item: "stale" for item in stale_items(items)}
    held.update({item: "flagged" for item in flagged_items(items)})
    return held
