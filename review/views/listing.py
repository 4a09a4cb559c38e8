"""The queue page and bulk decisions over it."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET, require_http_methods

from review import filters, services
from review.forms import SEEN_MALFORMED, BulkForm
from review.models import Candidate, ReviewDecision
from review.selectors import bulk as bulk_selectors
from review.selectors import counts as count_selectors
from review.selectors import queue as queue_selectors
from review.selectors import reasons as reason_selectors
from review.selectors import reports as report_selectors
from review.selectors import similar as similar_selectors
from review.services import changes as changes_service
from review.views.common import (
    bad_request_page,
    can_review,
    candidate_url,
    filterset_for,
    forbidden_page,
    reviewer_of,
    small_int,
    with_qs,
)
from review.views.undo import offer_undo


@login_required
@require_GET
def queue(request: HttpRequest) -> HttpResponse:
    # "Select all N matching" decides what the filter matched at this instant: taken before the
    # page and its count are read, so a candidate arriving meanwhile is neither counted nor
    # decided (issue 20, N10).
    seen = int(timezone.now().timestamp() * 1_000_000)
    with similar_selectors.flags_memo():  # the near filter, the counts and the page: flags once
        return _queue(request, seen)


def _queue(request: HttpRequest, seen: int) -> HttpResponse:
    filterset = filterset_for(request)
    valid = filterset.is_valid()
    status = filterset.status_value if valid else ""
    sort = filterset.sort
    if valid:
        rows = filterset.qs
        page = queue_selectors.queue_page(
            rows,
            sort=sort,
            after=small_int(request.GET.get("after")),
            before=small_int(request.GET.get("before")),
            split=not filterset.one_family,
            decided=status != Candidate.Status.PENDING,
        )
        matching = count_selectors.capped_count(rows)
        hidden = filterset.taken_back_rows()
        taken_back = count_selectors.capped_count(hidden) if hidden is not None else None
    else:
        page = queue_selectors.QueuePage(rows=[], next_after=None, prev_before=None, is_first=True)
        matching = count_selectors.CappedCount(0, False)
        taken_back = None
    family_rows = filterset.without_family()
    return render(
        request,
        "review/queue.html",
        {
            "filter_form": filterset.form,
            "filter_qs": filterset.querystring(),
            "family_qs": filterset.querystring_without("family"),
            "status": status,
            "sort": sort,
            "sorts": [
                queue_selectors.SORTS[key] for key in queue_selectors.sort_keys(filterset.status_value)
            ],
            "sort_problem": filterset.sort_problem,
            "page": page,
            "matching": matching,
            # Decided lists: how many decisions taken back they leave out (None: not hiding any).
            "taken_back": taken_back,
            "taken_back_only": valid
            and status in filters.DECIDED
            and filterset.form.cleaned_data.get("taken_back") == "only",
            "taken_back_qs": filterset.querystring_without("taken_back"),
            "counts": count_selectors.queue_counts(family_rows),
            "reported": report_selectors.reported_count(),
            "count_word": filterset.status_value,
            "scopes": count_selectors.scope_suggestions(),
            "can_review": can_review(request),
            "bulk": can_review(request) and status == Candidate.Status.PENDING and bool(page.rows),
            "bulk_max": bulk_selectors.BULK_MAX,
            "seen": seen,
            "canned_reasons": reason_selectors.canned_reasons() if can_review(request) else [],
        },
    )


CONFLICT_WORDS = {
    "candidate_conflict": "changed since you looked",
    "candidate_terminal": "already decided",
    "artifact_conflict": "its target moved on",
    "candidate_not_found": "no longer exists",
    "self_approval_forbidden": "you wrote some of its text or captured its evidence: four-eyes review needs another reviewer",
}
HELD_WORDS = {
    "flagged": "hidden characters or text",
    "stale": "stale: its target moved on, rebase it first",
}


def held_words(why: str) -> str:
    """What a bulk approval's message says of a held item (``selectors.bulk.held_back``)."""
    if why.startswith("near:"):
        return f"near-duplicate of {why.removeprefix('near:')}"
    return HELD_WORDS[why]


def _links(items: list[tuple[int, str]], qs: str) -> SafeString:
    return format_html_join(
        ", ", '<a href="{}">#{}</a> ({})', ((candidate_url(pk, qs), pk, why) for pk, why in items)
    )


def _bulk_message(
    outcomes: list[services.BulkOutcome], decided: str, qs: str, held: list[tuple[int, str]]
) -> SafeString:
    """``8 approved, 2 conflicts: #12 (changed since you looked), #15 (...)``, with links, and
    ``Left out 1 flagged item: #9 (hidden characters or text)`` for a guarded bulk approval."""
    done = sum(1 for o in outcomes if o.outcome == "decided")
    failed = [o for o in outcomes if o.outcome != "decided"]
    text = format_html("{} {}", done, decided)
    if failed:
        noun = "conflict" if len(failed) == 1 else "conflicts"
        them = "it" if len(failed) == 1 else "them"
        text = format_html(
            "{}, {} {}: {}. Nothing was decided for {}; open {} to review the current version",
            text,
            len(failed),
            noun,
            _links([(o.pk, CONFLICT_WORDS.get(o.code or "", "conflict")) for o in failed], qs),
            them,
            them,
        )
    if held:
        text = format_html(
            "{}. Left out {} flagged item{}: {}. Approve {} on {} own page, or tick “Include flagged "
            "items” to approve {} in bulk",
            text,
            len(held),
            "" if len(held) == 1 else "s",
            _links([(pk, held_words(why)) for pk, why in held], qs),
            "it" if len(held) == 1 else "them",
            "its" if len(held) == 1 else "their",
            "it" if len(held) == 1 else "them",
        )
    return format_html("{}.", text)


def _bulk_request_changes(
    request: HttpRequest, items: list[tuple[int, int]], comment: str, qs: str, back: HttpResponse
) -> HttpResponse:
    """The bulk panel's "Request changes": the same comment on every selected candidate, each in
    its own transaction; "8 sent back, 2 conflicts" and an Undo of the batch."""
    outcomes = changes_service.candidates_request_changes_bulk(
        items=items, comment=comment, reviewer=reviewer_of(request)
    )
    as_bulk = [
        services.BulkOutcome(o.pk, 0, "decided" if o.outcome == "done" else o.outcome, o.code)
        for o in outcomes
    ]
    (messages.success if all(o.outcome == "done" for o in outcomes) else messages.warning)(
        request, _bulk_message(as_bulk, "sent back to their proposers", qs, []), extra_tags="bulk-reject"
    )
    done = [o.pk for o in outcomes if o.outcome == "done"]
    label = f"Requested changes on {len(done)} candidate{'' if len(done) == 1 else 's'}."
    offer_undo(request, done, label, qs, url=reverse("review:changes-undo"))
    return back


@login_required
@require_http_methods(["POST"])
def queue_bulk(request: HttpRequest) -> HttpResponse:
    """Approve or reject the selected rows (or all rows matching the filters, as the reviewer saw
    them), each in its own transaction, committed at once; back to the queue with "8 approved,
    2 conflicts" and an Undo of the batch (``views/undo.py``).

    Guard: a bulk approval leaves out items flagged for hidden characters, stale updates and
    later copies of a near-duplicate pair (``selectors.bulk``) unless ``include_flagged`` is ticked, and says which and why. A
    refused form (a reject without a reason, an empty selection) decides nothing."""
    if not can_review(request):
        return forbidden_page(request)
    filterset = filterset_for(request)
    qs = filterset.querystring()
    back = HttpResponseRedirect(with_qs(reverse("review:queue"), qs))
    back.status_code = 303
    form = BulkForm(request.POST)
    if "seen" in form.errors:
        # The page always posts a valid instant: an overflowing or malformed one is a bad
        # request, answered as such (it used to overflow the conversion: a 500).
        return bad_request_page(request, SEEN_MALFORMED)
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, str(error))
        return back
    data = form.cleaned_data
    if data["all_matching"]:
        if not filterset.is_valid() or filterset.status_value != Candidate.Status.PENDING:
            messages.error(request, "Only pending candidates can be decided.")
            return back
        items = bulk_selectors.matching_items(filterset.qs, seen=data["seen"])
    else:
        items = data["item"]
    if data["decision"] == "request_changes":
        return _bulk_request_changes(request, items, data["reason"], qs, back)
    decision = (
        ReviewDecision.Decision.APPROVED
        if data["decision"] == "approve"
        else ReviewDecision.Decision.REJECTED
    )
    guarded = decision == ReviewDecision.Decision.APPROVED and not data["include_flagged"]
    held = bulk_selectors.held_back(items) if guarded else {}
    outcomes = services.candidates_decide_bulk(
        items=[item for item in items if item not in held],
        decision=decision,
        reason=data["reason"] or None,
        reviewer=reviewer_of(request),
    )
    left_out = [(pk, held[(pk, version)]) for pk, version in dict.fromkeys(items) if (pk, version) in held]
    tags = "bulk-reject" if decision == ReviewDecision.Decision.REJECTED else ""
    message = _bulk_message(outcomes, str(decision), qs, left_out)
    (messages.warning if left_out else messages.success)(request, message, extra_tags=tags)
    decided = [o.pk for o in outcomes if o.outcome == "decided"]
    word = "Approved" if decision == ReviewDecision.Decision.APPROVED else "Rejected"
    offer_undo(request, decided, f"{word} {len(decided)} candidate{'' if len(decided) == 1 else 's'}.", qs)
    return back
