"""Plain factories for the review tests. Every row is written through the services (the path
production takes); wire bodies are built here so each test states only what it varies."""

from __future__ import annotations

import io
from itertools import count
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import call_command

from powercontext.memory.sources import CONTENT_SOURCE_TYPE, source_capture
from review import services
from review.models import Candidate

_counter = count(1)

REVIEW_PERMISSION = "review.review_candidate"


def experience_proposal(**overrides: str) -> dict[str, str]:
    n = next(_counter)
    proposal = {
        "situation": f"flaky integration build number {n} on the nightly pipeline",
        "action": "pinned the resolver and reran the job with verbose logging",
        "outcome": "the build went green and stayed green for a week",
        "lesson": "always pin transitive resolvers before chasing flakiness",
    }
    proposal.update(overrides)
    return proposal


def skill_proposal(**overrides: Any) -> dict[str, Any]:
    n = next(_counter)
    proposal: dict[str, Any] = {
        "name": f"release checklist {n}",
        "description": "Steps to cut a release safely.",
        "instructions": "Tag the commit, build artifacts, publish, announce.",
        "validation": ["the tag exists", "artifacts are published"],
    }
    proposal.update(overrides)
    return proposal


def proposal_for(family: str, **overrides: Any) -> dict[str, Any]:
    return (
        experience_proposal(**overrides)
        if family == Candidate.Family.EXPERIENCE
        else skill_proposal(**overrides)
    )


def make_source(
    scope_id: str = "repo", source_id: str | None = None, content: str = "captured prompt"
) -> dict[str, str]:
    """Capture a Source and return its wire reference ``{name, source_id}``."""
    if source_id is None:
        source_id = f"src-{next(_counter)}"
    source_capture(scope_id=scope_id, source_id=source_id, content=content, metadata=None)
    return {"name": CONTENT_SOURCE_TYPE, "source_id": source_id}


def submission(
    *,
    scope_id: str = "repo",
    family: str = Candidate.Family.EXPERIENCE,
    proposal: dict[str, Any] | None = None,
    source_refs: list[dict[str, Any]] | None = None,
    artifact_refs: list[dict[str, Any]] | None = None,
    target: dict[str, Any] | None = None,
    reason: str | None = None,
) -> services.Submission:
    """A valid submission; without evidence, one freshly captured Source is cited."""
    if source_refs is None:
        source_refs = [] if artifact_refs else [make_source(scope_id)]
    return services.Submission(
        proposal=proposal if proposal is not None else proposal_for(family),
        source_refs=source_refs,
        artifact_refs=list(artifact_refs or []),
        target=target,
        reason=reason,
    )


def make_candidate(
    scope_id: str = "repo", family: str = Candidate.Family.EXPERIENCE, **submission_fields: Any
) -> Candidate:
    return services.candidate_propose(
        scope_id=scope_id,
        family=family,
        submission=submission(scope_id=scope_id, family=family, **submission_fields),
    )


def make_user(username: str, *, reviewer: bool = False) -> Any:
    user, _ = get_user_model().objects.get_or_create(username=username)
    if reviewer:
        user.user_permissions.add(
            Permission.objects.get(codename="review_candidate", content_type__app_label="review")
        )
        user = get_user_model().objects.get(pk=user.pk)  # drop the permission cache
    return user


def make_reviewer(username: str = "reviewer") -> Any:
    return make_user(username, reviewer=True)


def make_approved(
    scope_id: str = "repo",
    family: str = Candidate.Family.EXPERIENCE,
    *,
    reviewer: Any = None,
    **submission_fields: Any,
) -> tuple[Candidate, dict[str, Any]]:
    """Propose and approve; return the approved candidate and its result ``ArtifactReference``."""
    candidate = make_candidate(scope_id, family, **submission_fields)
    approved = services.candidate_approve(
        scope_id=scope_id,
        candidate_id=candidate.candidate_id,
        expected_version=candidate.version,
        reviewer=reviewer or make_reviewer(),
    )
    return approved, result_ref(approved)


def result_ref(candidate: Candidate) -> dict[str, Any]:
    assert candidate.result_head is not None and candidate.result_revision is not None
    return {
        "family": candidate.result_head.family,
        "artifact_id": candidate.result_head.artifact_id,
        "revision": candidate.result_revision,
    }


def create_token(username: str, *, reviewer: bool = False) -> tuple[str, list[str]]:
    """Run ``create_api_token``; return the token (its last output line) and all output lines."""
    out = io.StringIO()
    args = [username, "--reviewer"] if reviewer else [username]
    call_command("create_api_token", *args, stdout=out)
    lines = out.getvalue().splitlines()
    return lines[-1], lines


def propose_body(
    scope_id: str = "repo",
    family: str = Candidate.Family.EXPERIENCE,
    *,
    proposal: dict[str, Any] | None = None,
    source_refs: list[dict[str, Any]] | None = None,
    artifact_refs: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A valid propose request body; without evidence, one freshly captured Source is cited."""
    if source_refs is None:
        source_refs = [] if artifact_refs else [make_source(scope_id)]
    return {
        "scope_id": scope_id,
        "proposal": proposal if proposal is not None else proposal_for(family),
        "source_refs": source_refs,
        "artifact_refs": artifact_refs or [],
        **extra,
    }


def assert_error(response: Any, status: int, code: str) -> Any:
    """One error response: status, the exact envelope, its code; returns ``error.details``."""
    assert response.status_code == status, (response.status_code, response.content)
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "details"}, body
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body["error"]["details"]


def assert_invalid(response: Any) -> list[dict[str, Any]]:
    """422 invalid_request with ``details.errors``; returns the errors."""
    details = assert_error(response, 422, "invalid_request")
    assert isinstance(details, dict) and isinstance(details.get("errors"), list) and details["errors"], (
        details
    )
    return details["errors"]
