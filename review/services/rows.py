"""Candidate rows in a review write: locking one (the decisions, revise, rebase, reopen) and
writing a version."""

from __future__ import annotations

import dataclasses

from django.contrib.auth.models import User

from powercontext.core.exceptions import CandidateConflict, CandidateNotFound, CandidateTerminal
from powercontext.core.secret_door import redact_strings, redact_text
from review.models import Candidate, CandidateVersion
from review.selectors import similar
from review.services.submission import Submission


def lock_candidate(
    scope_id: str, candidate_id: str, *, status: str, expected_version: int, wrong_status: str | None = None
) -> Candidate:
    """Inside the caller's transaction: lock the candidate row (not its joined version) and check
    it is in ``status`` at ``expected_version`` with a latest version. Raises ``CandidateNotFound``,
    ``CandidateTerminal`` (another status; ``wrong_status`` is its message) or ``CandidateConflict``."""
    candidate = (
        Candidate.objects.select_for_update(of=("self",))
        .filter(scope_id=scope_id, candidate_id=candidate_id)
        .select_related("latest")
        .first()
    )
    if candidate is None:
        raise CandidateNotFound()
    if candidate.status != status:
        details = {"status": candidate.status}
        raise (
            CandidateTerminal(wrong_status, details=details)
            if wrong_status
            else CandidateTerminal(details=details)
        )
    if candidate.version != expected_version or candidate.latest is None:
        raise CandidateConflict(
            details={"expected_version": expected_version, "current_version": candidate.version}
        )
    return candidate


def write_version(
    candidate: Candidate, version: int, submission: Submission, user: User | None
) -> CandidateVersion:
    """Store ``submission`` as ``candidate``'s version ``version``, written by ``user``, with the
    term sketch the near-duplicate check compares."""
    # The redaction door: every string of the proposal and the reason, whoever wrote them.
    submission = dataclasses.replace(
        submission, proposal=redact_strings(submission.proposal), reason=redact_text(submission.reason)
    )
    found = similar.terms(submission.proposal, candidate.family)
    return CandidateVersion.objects.create(
        candidate=candidate,
        version=version,
        created_by=user,
        terms_sketch=similar.sketch(found),
        terms_count=len(found),
        **dataclasses.asdict(submission),
    )
