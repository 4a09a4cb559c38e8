"""Four-eyes review (issue 22, issue 32): with ``POWERCONTEXT_REVIEW_FOUR_EYES`` on, nobody
approves a candidate holding text they wrote — a version they proposed, revised or rebased, a
version of a candidate it was reopened or undone from, or a source cited as its evidence that one
of their tokens captured — so every approved version has been read by someone other than each of
its writers.

The check runs inside ``candidate_approve``'s transaction, after the candidate row is locked and
before anything is written, so the single approve, bulk approve and the /v1 API refuse alike.
"""

from __future__ import annotations

from django.contrib.auth.models import User

from powercontext.core.exceptions import Forbidden
from review.models import Candidate
from review.selectors.governance import self_approval, self_approval_why


class SelfApprovalForbidden(Forbidden):
    """403: four-eyes review is on and the reviewer wrote text of this candidate.
    ``details["versions"]`` lists the versions holding her text, ``details["sources"]`` the
    evidence sources she captured (each only when it applies)."""

    code = "self_approval_forbidden"
    default_message = (
        "Four-eyes review is on: you wrote a version of this candidate, so another reviewer must approve it."
    )


def check_four_eyes(candidate: Candidate, reviewer: User) -> None:
    """Raise ``SelfApprovalForbidden`` when four-eyes review forbids ``reviewer`` to approve:
    ``details`` names the ``versions`` whose text she wrote and the evidence ``sources`` she
    captured (each key only when it applies)."""
    found = self_approval(candidate, reviewer.pk)
    if found:
        message = f"Four-eyes review is on: {self_approval_why(found)}, so another reviewer must approve it."
        raise SelfApprovalForbidden(message, details=found)
