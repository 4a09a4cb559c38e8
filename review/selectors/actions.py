"""What the candidate page offers to take a decision back, and the audit of what was taken back."""

from __future__ import annotations

from dataclasses import dataclass

from powercontext.core.models import Artifact
from review.models import Candidate, ReviewAction
from review.selectors.governance import four_eyes_enabled

TAKE_BACK = (ReviewAction.Action.REOPENED, ReviewAction.Action.RETIRED, ReviewAction.Action.REVERTED)


@dataclass(frozen=True)
class TakeBack:
    """``reopen``: the candidate is rejected and not reopened yet (its content can be proposed again). ``head``: the approved
    artifact's head as it is now (retire while active; revert to ``revert_to``, newest first).
    ``revert_proposes``: four-eyes review is on, so a revert is proposed for another reviewer."""

    reopen: bool
    head: Artifact | None
    revert_to: tuple[int, ...]
    actions: tuple[ReviewAction, ...]
    revert_proposes: bool = False


def take_back(candidate: Candidate) -> TakeBack:
    # The review thread's entries (request changes, comments) are shown in the thread instead.
    actions = ReviewAction.objects.filter(candidate=candidate, action__in=TAKE_BACK).select_related(
        "reviewer", "artifact"
    )
    head = None
    revert_to: tuple[int, ...] = ()
    if candidate.status == Candidate.Status.APPROVED and candidate.result_head_id is not None:
        head = Artifact.objects.filter(pk=candidate.result_head_id).first()
        if head is not None:
            highest = (
                head.current_revision if head.state == Artifact.State.RETIRED else head.current_revision - 1
            )
            revert_to = tuple(range(highest, 0, -1))
    return TakeBack(
        reopen=candidate.status == Candidate.Status.REJECTED
        and not any(act.action == ReviewAction.Action.REOPENED for act in actions),
        head=head,
        revert_to=revert_to,
        actions=tuple(actions.order_by("-acted_at", "-pk")),
        revert_proposes=four_eyes_enabled(),
    )
