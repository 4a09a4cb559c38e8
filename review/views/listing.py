"""The queue page and bulk decisions over it."""

from __future__ import annotations

from datetime import UTC, datetime

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET, require_http_methods

from review import services
from review.forms import BulkForm
from review.models import Candidate, ReviewDecision
from review.selectors import counts as count_selectors
from review.selectors import queue as queue_selectors
from review.selectors import reasons as reason_selectors
from review.views.common import (
    can_review,
    candidate_url,
    filterset_for,
    forbidden_page,
    reviewer_of,
    small_int,
    with_qs,
)


@login_required
@require_GET
def queue(request: HttpRequest) -> HttpResponse:
    # "Select all N matching" decides what the filter matched at this instant: taken before the
    # page and its count are read, so a candidate arriving meanwhile is neither counted nor
    # decided (issue 20, N10).
    seen = int(timezone.now().timestamp() * 1_000_000)
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
    else:
        page = queue_selectors.QueuePage(rows=[], next_after=None, prev_before=None, is_first=True)
        matching = count_selectors.CappedCount(0, False)
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
            "counts": count_selectors.queue_counts(family_rows),
            "count_word": filterset.status_value,
            "scopes": count_selectors.scope_suggestions(),
            "can_review": can_review(request),
            "bulk": can_review(request) and status == Candidate.Status.PENDING and bool(page.rows),
            "bulk_max": queue_selectors.BULK_MAX,
            "seen": seen,
            "canned_reasons": reason_selectors.canned_reasons() if can_review(request) else [],
            "undo_seconds": settings.POWERCONTEXT_REVIEW_UNDO_SECONDS,
        },
    )


CONFLICT_WORDS = {
    "candidate_conflict": "changed since you looked",
    "candidate_terminal": "already decided",
    "artifact_conflict": "its target moved on",
    "candidate_not_found": "no longer exists",
    "flagged": "holds hidden text or characters: approve it from its own page",
    "self_approval_forbidden": "you wrote a version of it: four-eyes review needs another reviewer",
}


def _bulk_message(outcomes: list[services.BulkOutcome], decided: str, qs: str) -> SafeString:
    """``8 approved, 2 conflicts: #12 (changed since you looked), #15 (...)``, with links."""
    done = sum(1 for o in outcomes if o.outcome == "decided")
    failed = [o for o in outcomes if o.outcome != "decided"]
    text = format_html("{} {}", done, decided)
    if not failed:
        return format_html("{}.", text)
    links = format_html_join(
        ", ",
        '<a href="{}">#{}</a> ({})',
        ((candidate_url(o.pk, qs), o.pk, CONFLICT_WORDS.get(o.code or "", "conflict")) for o in failed),
    )
    noun = "conflict" if len(failed) == 1 else "conflicts"
    return format_html(
        "{}, {} {}: {}. Nothing was decided for {}; open {} to review the current version.",
        text,
        len(failed),
        noun,
        links,
        "it" if len(failed) == 1 else "them",
        "it" if len(failed) == 1 else "them",
    )


@login_required
@require_http_methods(["POST"])
def queue_bulk(request: HttpRequest) -> HttpResponse:
    """Approve or reject the selected rows (or all rows matching the filters, as the reviewer saw
    them), each in its own transaction; back to the queue with "8 approved, 2 conflicts".

    ``deferred=1`` (sent in the background as the reviewer left the page during the Undo window,
    see ``_undo.js``): the same messages wait for the next page, and the answer is a bare 204, or
    400 for a refused form."""
    if not can_review(request):
        return forbidden_page(request)
    filterset = filterset_for(request)
    qs = filterset.querystring()
    deferred = request.POST.get("deferred") == "1"
    back = HttpResponseRedirect(with_qs(reverse("review:queue"), qs))
    back.status_code = 303
    refused = HttpResponse(status=400) if deferred else back
    form = BulkForm(request.POST)
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, str(error))
        return refused
    data = form.cleaned_data
    if data["all_matching"]:
        if not filterset.is_valid() or filterset.status_value != Candidate.Status.PENDING:
            messages.error(request, "Only pending candidates can be decided.")
            return refused
        seen = datetime.fromtimestamp(data["seen"] / 1_000_000, tz=UTC)
        items = queue_selectors.matching_items(filterset.qs, seen=seen)
    else:
        items = data["item"]
    decision = (
        ReviewDecision.Decision.APPROVED
        if data["decision"] == "approve"
        else ReviewDecision.Decision.REJECTED
    )
    # Hidden text or characters: only a reviewer who read the warning on the candidate's own page
    # may approve it (issue 20, N3/N5); rejecting in bulk stays possible.
    flagged = queue_selectors.flagged_items(items) if decision == ReviewDecision.Decision.APPROVED else set()
    outcomes = services.candidates_decide_bulk(
        items=[item for item in items if item not in flagged],
        decision=decision,
        reason=data["reason"] or None,
        reviewer=reviewer_of(request),
    )
    outcomes += [
        services.BulkOutcome(pk, version, "conflict", "flagged")
        for pk, version in items
        if (pk, version) in flagged
    ]
    tags = "bulk-reject" if decision == ReviewDecision.Decision.REJECTED else ""
    messages.success(request, _bulk_message(outcomes, str(decision), qs), extra_tags=tags)
    return HttpResponse(status=204) if deferred else back
