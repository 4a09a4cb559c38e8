"""Bulk selection in the Review Inbox: "select all N matching" as the reviewer saw it, and which
selected rows a bulk approval leaves out unless the reviewer includes them explicitly: items
flagged for hidden characters or text (as the candidate page warns about them), stale updates
(the revision they target is no longer their Artifact's head, so approving them as they stand
cannot succeed: rebase first) and later copies of a near-duplicate pair (as the queue flags
them: approving both copies would store the same lesson twice)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import OuterRef, Q, QuerySet, Subquery

from powercontext.core.models import Artifact
from review import textmarks
from review.models import Candidate, CandidateVersion
from review.selectors.queue import proposal_texts
from review.selectors.similar import near_duplicate_flags

BULK_MAX = 200


def matching_items(
    rows: QuerySet[Candidate], *, seen: datetime, limit: int = BULK_MAX
) -> list[tuple[int, int]]:
    """``(pk, version)`` of the pending ``rows`` as a reviewer saw them at ``seen`` ("select all
    N matching"), oldest first, at most ``limit``: each candidate's newest version written by
    then, so a candidate revised since is a conflict when decided, and one proposed since is not
    included. One query."""
    seen_version = (
        CandidateVersion.objects.filter(candidate=OuterRef("pk"), created_at__lte=seen)
        .order_by("-version")
        .values("version")[:1]
    )
    found = (
        rows.filter(status=Candidate.Status.PENDING, created_at__lte=seen)
        .annotate(seen_version=Subquery(seen_version))
        .filter(seen_version__isnull=False)
        .order_by("pk")
        .values_list("pk", "seen_version")[:limit]
    )
    return [(pk, version) for pk, version in found]


# The estimated Markdown work (review.markdown.cost, microseconds) one bulk approval may spend
# checking for hidden text; items past it are left for their own pages, so the request stays
# bounded whatever the proposals hold.
BULK_MARKDOWN_BUDGET = 2_000_000


def flagged_items(items: list[tuple[int, int]]) -> set[tuple[int, int]]:
    """The ``(pk, version)`` items whose version a reviewer must read on its own page: its
    proposal, reason or scope holds marked characters, or a proposal field's formatted view hides
    text (``review.markdown.hidden_text``), or checking it would pass ``BULK_MARKDOWN_BUDGET``.
    Bulk approval leaves them out, as the candidate page warns about them. One query."""
    from review.markdown import cost, hidden_text

    wanted = set(items)
    budget = BULK_MARKDOWN_BUDGET
    rows = CandidateVersion.objects.filter(candidate_id__in={pk for pk, _ in wanted}).values_list(
        "candidate_id", "version", "proposal", "reason", "candidate__scope_id"
    )
    flagged: set[tuple[int, int]] = set()
    for pk, version, proposal, reason, scope_id in rows:
        if (pk, version) not in wanted:
            continue
        texts = proposal_texts(proposal)
        if textmarks.has_marks("\n".join([scope_id, reason or "", *texts])):
            flagged.add((pk, version))
            continue
        budget -= sum(cost(text) for text in texts)
        if budget < 0 or any(hidden_text(text) for text in texts):
            flagged.add((pk, version))  # past the budget: left for its own page, unchecked
    return flagged


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


def near_duplicate_items(items: list[tuple[int, int]]) -> dict[tuple[int, int], str]:
    """The ``(pk, version)`` items whose candidate the queue flags as the later copy of a
    near-duplicate pair (``similar.near_duplicate_flags``), each with the earlier one it copies
    (``#12`` or ``exp_…``). The earlier copy is never among them. A fixed number of queries."""
    wanted = set(items)
    rows = list(
        Candidate.objects.filter(pk__in={pk for pk, _ in wanted})
        .select_related("latest")
        .defer("latest__proposal")
    )
    flags = near_duplicate_flags(rows)
    return {(pk, version): flag.short for pk, version in wanted if (flag := flags.get(pk)) is not None}


def held_back(items: list[tuple[int, int]]) -> dict[tuple[int, int], str]:
    """The items a bulk approval leaves out, each with why: ``flagged``, ``stale`` or
    ``near:<the earlier copy>`` (``#12`` or ``exp_…``)."""
    held = {item: f"near:{of}" for item, of in near_duplicate_items(items).items()}
    held.update({item: "stale" for item in stale_items(items)})
    held.update({item: "flagged" for item in flagged_items(items)})
    return held
