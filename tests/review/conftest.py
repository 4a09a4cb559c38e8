"""The Review Inbox cast (reviewer, viewer, outsider) and plain candidate factories.

Factories write through the services only (``source_capture``, ``candidate_propose``,
``candidate_approve``): the same path production takes.
"""

from __future__ import annotations

from itertools import count
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User

from powercontext.memory.sources import source_capture
from review import services
from review.models import Candidate, CannedReason

PASSWORD = "review-inbox-test-password"
_counter = count(1)


@pytest.fixture(autouse=True)
def _fast_password_hasher(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def make_user(username: str, *, reviewer: bool = False, active: bool = True) -> User:
    user = User.objects.create_user(username=username, password=PASSWORD, is_active=active)
    if reviewer:
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label="review", codename="review_candidate")
        )
    return user


@pytest.fixture
def reviewer(db: None) -> User:
    """May approve, reject and revise (``review.review_candidate``)."""
    return make_user("reviewer", reviewer=True)


@pytest.fixture
def viewer(db: None) -> User:
    """Logged in without the permission: reads the inbox, acts on nothing."""
    return make_user("viewer")


@pytest.fixture
def outsider(db: None) -> User:
    """A deactivated account: no inbox access at all (treated as anonymous)."""
    return make_user("outsider", active=False)


def make_source(
    scope_id: str = "repo", content: str | None = None, source_id: str | None = None
) -> dict[str, str]:
    """Capture a Source and return its evidence reference."""
    number = next(_counter)
    captured = source_capture(
        scope_id=scope_id,
        source_id=source_id or f"prompt-{number}",
        content=content if content is not None else f"The user asked about flaky test number {number}.",
        metadata=None,
    )
    return {"name": captured.source_type, "source_id": captured.source_id}


def experience(**overrides: str) -> dict[str, str]:
    number = next(_counter)
    proposal = {
        "situation": f"A migration timed out on a large table ({number}).",
        "action": "Split the migration into batches of ten thousand rows.",
        "outcome": "The migration finished in four minutes without locking writers.",
        "lesson": f"Batch big data migrations so they never hold a long table lock ({number}).",
    }
    proposal.update(overrides)
    return proposal


def skill(**overrides: Any) -> dict[str, Any]:
    number = next(_counter)
    proposal: dict[str, Any] = {
        "name": f"Release checklist {number}",
        "description": "Steps to cut a release.",
        "instructions": "Bump the version.\nTag the commit.\nPublish the package.",
        "validation": ["The tag exists", "The package is on the index"],
    }
    proposal.update(overrides)
    return proposal


def make_candidate(
    scope_id: str = "repo",
    family: str = Candidate.Family.EXPERIENCE,
    proposal: dict[str, Any] | None = None,
    *,
    reason: str | None = "Seen twice this week.",
    source_refs: list[dict[str, Any]] | None = None,
    artifact_refs: list[dict[str, Any]] | None = None,
    target: dict[str, Any] | None = None,
) -> Candidate:
    if source_refs is None and not artifact_refs:
        source_refs = [make_source(scope_id)]
    if proposal is None:
        proposal = experience() if family == Candidate.Family.EXPERIENCE else skill()
    return services.candidate_propose(
        scope_id=scope_id,
        family=family,
        submission=services.Submission(
            proposal=proposal,
            source_refs=source_refs or [],
            artifact_refs=artifact_refs or [],
            target=target,
            reason=reason,
        ),
    )


def result_ref(candidate: Candidate) -> dict[str, Any]:
    """The artifact reference an approved candidate produced."""
    assert candidate.result_head is not None
    return {
        "family": candidate.result_head.family,
        "artifact_id": candidate.result_head.artifact_id,
        "revision": candidate.result_revision,
    }


def approve(candidate: Candidate, reviewer: User) -> Candidate:
    return services.candidate_approve(
        scope_id=candidate.scope_id,
        candidate_id=candidate.candidate_id,
        expected_version=candidate.version,
        reviewer=reviewer,
    )


def reject(candidate: Candidate, reviewer: User, reason: str = "Too vague.") -> Candidate:
    """Reject the candidate's current version."""
    return services.candidate_reject(
        scope_id=candidate.scope_id,
        candidate_id=candidate.candidate_id,
        expected_version=candidate.version,
        reason=reason,
        reviewer=reviewer,
    )


def revise(candidate: Candidate, reviewer: User, **changes: Any) -> Candidate:
    latest = candidate.latest
    assert latest is not None
    return services.candidate_revise(
        scope_id=candidate.scope_id,
        candidate_id=candidate.candidate_id,
        expected_version=candidate.version,
        submission=services.Submission(
            proposal={**latest.proposal, **changes},
            source_refs=latest.source_refs,
            artifact_refs=latest.artifact_refs,
            target=latest.target,
            reason=latest.reason,
        ),
        reviewer=reviewer,
    )


def make_update_candidate(base: Candidate, proposal: dict[str, Any] | None = None) -> Candidate:
    """A candidate that updates the Experience ``base`` produced (its current revision)."""
    ref = result_ref(base)
    return make_candidate(
        base.scope_id, proposal=proposal or experience(), artifact_refs=[ref], target=ref, source_refs=[]
    )


DUPLICATE_REASON = "Duplicate of an existing Experience."


def make_canned_reasons(*texts: str) -> None:
    """Exactly these canned reasons, in order (key 1 first). The migration seeds defaults, but
    transactional tests flush every table, so tests that need them create them."""
    CannedReason.objects.all().delete()
    for position, text in enumerate(texts or (DUPLICATE_REASON,), start=1):
        CannedReason.objects.create(text=text, position=position)
