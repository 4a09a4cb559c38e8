"""Governance reads of the Inbox (issue 22): who wrote a decided version (agent, pipeline or
reviewer) next to who decided it, the links from a decision to its audit entry and artifact
history, and which canned reasons a rejection used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import Exists, OuterRef, Q
from django.urls import reverse

from powercontext.core.models import ApiToken, Source, owner_key
from review.models import Candidate, CandidateVersion, ReviewAction, ReviewDecision

REVIEW_PERMISSION = ("review", "review_candidate")


def four_eyes_enabled() -> bool:
    return bool(getattr(settings, "POWERCONTEXT_REVIEW_FOUR_EYES", False))


def lineage(candidate_pk: int) -> list[int]:
    """The candidate and the candidates its text was copied from by a Reopen or an Undo
    (``review.services.reversal.repropose``), newest first: one indexed query per step."""
    chain = [candidate_pk]
    while True:
        origin = (
            ReviewAction.objects.filter(action=ReviewAction.Action.REOPENED, reopened_as_id=chain[-1])
            .values_list("candidate_id", flat=True)
            .first()
        )
        if origin is None or origin in chain:
            return chain
        chain.append(origin)


def versions_written_by(candidate_pk: int, user_id: int | None) -> list[int]:
    """The versions of the candidate that hold text ``user_id`` wrote, oldest first: those she
    wrote, and version 1 when she wrote a version of a candidate it was copied from (its text is
    that version's). Authorship follows the text, not who reopened or undid it (issue 32)."""
    if user_id is None:
        return []
    chain = lineage(candidate_pk)
    rows = CandidateVersion.objects.filter(candidate_id__in=chain, created_by_id=user_id)
    written = {
        (version if candidate == candidate_pk else 1)
        for candidate, version in rows.values_list("candidate_id", "version")
    }
    return sorted(written)


def self_approval_versions(candidate_pk: int, user_id: int | None) -> list[int]:
    """What stops ``user_id`` from approving the candidate under four-eyes review: the versions
    she wrote (empty when the setting is off, or she wrote none)."""
    if not four_eyes_enabled():
        return []
    return versions_written_by(candidate_pk, user_id)


def sources_captured_by(candidate: Candidate, user_id: int | None) -> list[str]:
    """The source ids among the latest version's evidence that ``user_id`` captured, with any of
    her tokens (``Source.captured_by``), sorted: a candidate the pipeline drew from her own
    capture holds text she wrote, though no version names her (issue 32)."""
    latest = candidate.latest
    if user_id is None or latest is None or not latest.source_refs:
        return []
    captors = [owner_key(token) for token in ApiToken.objects.filter(user_id=user_id).only("pk")]
    if not captors:
        return []
    wanted = Q()
    for ref in latest.source_refs:
        wanted |= Q(source_type=ref["name"], source_id=ref["source_id"])
    rows = Source.objects.filter(wanted, scope_id=candidate.scope_id, captured_by__in=captors)
    return sorted(set(rows.values_list("source_id", flat=True)))


def self_approval(candidate: Candidate, user_id: int | None) -> dict[str, list[Any]]:
    """Why four-eyes review stops ``user_id`` approving ``candidate`` (empty: nothing does, or
    the setting is off): ``versions`` she wrote (or whose text she wrote, ``versions_written_by``)
    and evidence ``sources`` she captured."""
    if not four_eyes_enabled():
        return {}
    found: dict[str, list[Any]] = {}
    if versions := versions_written_by(candidate.pk, user_id):
        found["versions"] = versions
    if sources := sources_captured_by(candidate, user_id):
        found["sources"] = sources
    return found


# What wrote a version, as the audit names it.
KIND_REVIEWER = "reviewer"
KIND_AGENT = "agent"
KIND_NO_ACCOUNT = "pipeline or local agent"


def _holds_review_permission() -> Q:
    app_label, codename = REVIEW_PERMISSION
    return (
        Q(is_superuser=True)
        | Q(user_permissions__codename=codename, user_permissions__content_type__app_label=app_label)
        | Q(groups__permissions__codename=codename, groups__permissions__content_type__app_label=app_label)
    )


def reviewer_exists(user_ref: Any) -> Exists:
    """An ``Exists`` that is true when the user ``user_ref`` (an ``OuterRef``) holds the review
    permission, directly, through a group, or as a superuser: annotates a whole page at once."""
    return Exists(User.objects.filter(_holds_review_permission(), pk=user_ref, is_active=True))


def author_kind(user_id: int | None, version: int, is_reviewer: bool) -> str:
    """Who wrote a version: a later version is always a reviewer's (revise, rebase and reopen need
    the review permission); version 1 is an agent's (a token's user without the permission), a
    reviewer's (her token, or a reopen), or nobody's account (the background pipeline, or a local
    agent without a token where tokens are optional)."""
    if user_id is None:
        return KIND_NO_ACCOUNT
    return KIND_REVIEWER if version > 1 or is_reviewer else KIND_AGENT


def reviewer_ids(user_ids: set[int]) -> set[int]:
    """Which of these users hold the review permission (one query; none for an empty set)."""
    if not user_ids:
        return set()
    rows = User.objects.filter(_holds_review_permission(), pk__in=user_ids, is_active=True)
    return set(rows.values_list("pk", flat=True).distinct())


@dataclass(frozen=True)
class Author:
    name: str | None
    kind: str


def version_authors(candidate: Candidate) -> dict[int, Author]:
    """Each version's author and kind, by version number (one query, whatever the versions)."""
    rows = (
        CandidateVersion.objects.filter(candidate=candidate)
        .annotate(is_reviewer=reviewer_exists(OuterRef("created_by_id")))
        .values_list("version", "created_by_id", "created_by__username", "is_reviewer")
    )
    return {
        version: Author(name, author_kind(user, version, reviewer)) for version, user, name, reviewer in rows
    }


@dataclass(frozen=True)
class DecisionAudit:
    """The audit side of a decided candidate: who wrote the decided version, and where its audit
    entry and the approved artifact's history are (None when the user cannot open the admin)."""

    decision_pk: int
    version: int
    author: Author
    audit_url: str | None
    history_url: str | None


def _can_view(user: Any, model: str) -> bool:
    return bool(user.is_active and user.is_staff and user.has_perm(model))


def decision_audit(candidate: Candidate, user: Any) -> DecisionAudit | None:
    """``DecisionAudit`` of a decided candidate (None while pending). The decided version is the
    candidate's latest (a decision never adds a version), loaded with its author by
    ``candidate_load``: one query for the author's permission, none for a pipeline version."""
    try:
        decision = candidate.decision
    except ReviewDecision.DoesNotExist:
        return None
    version = candidate.latest
    if version is None or version.version != decision.version:  # pragma: no cover - see above
        version = CandidateVersion.objects.select_related("created_by").get(
            candidate=candidate, version=decision.version
        )
    writer = version.created_by
    is_reviewer = writer is not None and bool(reviewer_ids({writer.pk}))
    author = Author(
        writer.get_username() if writer is not None else None,
        author_kind(version.created_by_id, version.version, is_reviewer),
    )
    audit_url = history_url = None
    if _can_view(user, "review.view_reviewdecision"):
        audit_url = reverse("admin:review_reviewdecision_change", args=[decision.pk])
    head = candidate.result_head
    if head is not None and _can_view(user, "powercontext.view_artifactrevision"):
        query = urlencode({"scope_id__exact": head.scope_id, "artifact_id__exact": head.artifact_id})
        history_url = reverse("admin:powercontext_artifactrevision_changelist") + "?" + query
    return DecisionAudit(decision.pk, decision.version, author, audit_url, history_url)


def self_approval_why(found: dict[str, list[Any]]) -> str:
    """``self_approval``'s findings in words ("you wrote version 1 of it and you captured the
    source s-1 it cites"); empty when there are none."""
    parts = []
    if versions := found.get("versions"):
        plural = "s" if len(versions) > 1 else ""
        parts.append(f"you wrote version{plural} {', '.join(str(v) for v in versions)} of it")
    if sources := found.get("sources"):
        plural = "s" if len(sources) > 1 else ""
        parts.append(f"you captured the source{plural} {', '.join(sources)} it cites")
    return " and ".join(parts)


def approve_refusal(candidate: Candidate, user: Any) -> dict[str, list[Any]]:
    """What stops ``user`` approving a pending candidate under four-eyes review
    (``self_approval``; empty: she may approve, or the setting is off; no query then)."""
    if candidate.status != Candidate.Status.PENDING:
        return {}
    return self_approval(candidate, getattr(user, "pk", None))


def page_context(candidate: Candidate, user: Any, *, history: bool = False) -> dict[str, Any]:
    """What the candidate page (or, ``history``, its history page) shows of governance:
    ``self_approval`` (see ``approve_refusal``), ``audit`` (``decision_audit``) and, on the
    history page, ``authors`` (``version_authors``)."""
    context: dict[str, Any] = {"audit": decision_audit(candidate, user)}
    if history:
        context["authors"] = version_authors(candidate)
    else:
        context["self_approval"] = approve_refusal(candidate, user)
        context["self_approval_why"] = self_approval_why(context["self_approval"])
    return context


def split_reason(reason: str | None, canned: list[str]) -> tuple[list[str], str]:
    """A rejection's reason as (the canned reasons it used, one per line as the Inbox inserts
    them, in order; the rest of the text)."""
    used: list[str] = []
    rest: list[str] = []
    for line in (reason or "").splitlines():
        (used if line.strip() in canned and line.strip() not in used else rest).append(line.strip())
    return used, "\n".join(rest).strip()
