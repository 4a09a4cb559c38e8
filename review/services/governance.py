"""Four-eyes review (issue 22): with ``POWERCONTEXT_REVIEW_FOUR_EYES`` on, nobody approves a
candidate they wrote a version of (proposed it, revised it, rebased it or reopened it), so every
approved version has been read by someone other than each of its authors.

The check runs inside ``candidate_approve``'s transaction, after the candidate row is locked and
before anything is written, so the single approve, bulk approve and the /v1 API refuse alike.
"""

from __future__ import annotations

from django.contrib.auth.models import User

from powercontext.core.exceptions import Forbidden
from review.models import Candidate
from review.selectors.governance import self_approval_versions


class SelfApprovalForbidden(Forbidden):
    """403: four-eyes review is on and the reviewer wrote a version of this candidate.
    ``details["versions"]`` lists the versions she wrote."""

    code = "self_approval_forbidden"
    default_message = (
        "Four-eyes review is on: you wrote a version of this candidate, so another reviewer must approve it."
    )


def check_four_eyes(candidate: Candidate, reviewer: User) -> None:
    """Raise ``SelfApprovalForbidden`` when four-eyes review forbids ``reviewer`` to approve."""
    written = self_approval_versions(candidate.pk, reviewer.pk)
    if written:
        raise SelfApprovalForbidden(details={"versions": written})
