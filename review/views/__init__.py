"""Review Inbox views: parse, authorize, call one service or selector, render.

Every page needs a logged-in user. Reviewers (``review.review_candidate``) may approve, reject and
revise; other users get the same pages read-only, and their POSTs are 403. Writes go through
``review.services`` only, each guarded by the hidden ``expected_version`` (compare-and-swap); a
stale or terminal candidate, or a target that moved on, renders the conflict page (409) with the
current version, never a 500. Every POST redirects (POST/redirect/GET): on success to the next
candidate, on a form error back to the page of the form, which shows the errors and the posted
text once (they travel in the session), so a reload never resubmits. Claims ("Assign to me",
``claims.py``) are advisory and never checked by the decision views. Reported items
(``reports.py``) are the Inbox's second kind of item: what agents reported wrong or outdated.
"""

from review.views.candidate import (
    candidate_approve,
    candidate_detail,
    candidate_history,
    candidate_rebase,
    candidate_reject,
    candidate_revise,
)
from review.views.changes import candidate_comment, candidate_request_changes, changes_undo
from review.views.claims import candidate_claim, candidate_unclaim
from review.views.conflict import candidate_merge
from review.views.listing import queue, queue_bulk
from review.views.reports import (
    reported_dismiss,
    reported_item,
    reported_list,
    reported_retire,
    reported_revise,
    reported_undo,
)
from review.views.reversal import candidate_reopen, candidate_retire, candidate_revert
from review.views.sharing import candidate_next, candidate_previous, candidate_viewing
from review.views.undo import decisions_undo

__all__ = [
    "candidate_approve",
    "candidate_claim",
    "candidate_comment",
    "candidate_detail",
    "candidate_history",
    "candidate_merge",
    "candidate_next",
    "candidate_previous",
    "candidate_rebase",
    "candidate_reject",
    "candidate_reopen",
    "candidate_request_changes",
    "candidate_retire",
    "candidate_revert",
    "candidate_revise",
    "candidate_unclaim",
    "candidate_viewing",
    "changes_undo",
    "decisions_undo",
    "queue",
    "queue_bulk",
    "reported_dismiss",
    "reported_item",
    "reported_list",
    "reported_retire",
    "reported_revise",
    "reported_undo",
]
