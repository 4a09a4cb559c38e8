"""Sharing a queue between reviewers: the "viewing" marker and where Next goes.

Opening a candidate marks it as being reviewed by the reviewer who opened it (a soft marker that
expires on its own, ``review.services.viewing``); the open page renews it with a small POST
(``candidate_viewing``). Next, Previous (``candidate_next`` / ``candidate_previous``) and the page
after a decision (``after_decision``) skip candidates another reviewer is viewing or has claimed,
and take the one they land on by marking it in the same step, so two reviewers pressing Next at
once never land on the same candidate. The queue's "Show items others are on" (``others``) makes
them go through every row again. A marker never blocks opening or deciding a candidate.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from review.filters import CandidateQueueFilter
from review.models import Candidate
from review.selectors import queue as queue_selectors
from review.selectors.viewing import viewing_holder
from review.services import viewing
from review.views.common import (
    can_review,
    candidate_url,
    filterset_for,
    forbidden_page,
    not_found_page,
    reviewer_of,
    with_qs,
)


def _skip_others(request: HttpRequest, filterset: CandidateQueueFilter) -> bool:
    """Whether navigation skips items others are on: for reviewers, unless the queue's "Show
    items others are on" is ticked."""
    return can_review(request) and not (filterset.is_valid() and filterset.form.cleaned_data.get("others"))


def navigable(request: HttpRequest, filterset: CandidateQueueFilter) -> QuerySet[Candidate]:
    """The queue's rows that Next and Previous may land on (the candidate page's links)."""
    rows = filterset.qs
    return viewing.free_rows(rows, reviewer_of(request)) if _skip_others(request, filterset) else rows


def _take(request: HttpRequest, filterset: CandidateQueueFilter, pk: int, *, forward: bool) -> int | None:
    """The candidate after (or before) ``pk`` in the queue the reviewer came from, taken (marked)
    for them; None when none is left."""
    if not filterset.is_valid():
        return None
    sort, split = filterset.sort, not filterset.one_family

    def neighbour(rows: QuerySet[Candidate], at: int) -> int | None:
        return queue_selectors.neighbour(rows, at, sort=sort, forward=forward, split=split)

    if not can_review(request):
        return neighbour(filterset.qs, pk)
    taken = viewing.viewing_take_next(
        filterset.qs,
        start=pk,
        reviewer=reviewer_of(request),
        neighbour=neighbour,
        skip_others=_skip_others(request, filterset),
    )
    return taken.pk


def after_decision(request: HttpRequest, pk: int) -> HttpResponseRedirect:
    """Go on to the next candidate of the same queue that nobody else is on (taken for the
    reviewer), or back to the queue when none is left."""
    filterset = filterset_for(request)
    qs = filterset.querystring()
    next_pk = _take(request, filterset, pk, forward=True)
    if next_pk is not None:
        return HttpResponseRedirect(candidate_url(next_pk, qs))
    return HttpResponseRedirect(with_qs(reverse("review:queue"), qs))


def _go(request: HttpRequest, pk: int, *, forward: bool) -> HttpResponse:
    filterset = filterset_for(request)
    qs = filterset.querystring()
    found = _take(request, filterset, pk, forward=forward)
    if found is not None:
        return HttpResponseRedirect(candidate_url(found, qs))
    where = "after" if forward else "before"
    messages.info(
        request,
        f"No candidate {where} #{pk} in this queue is free: the others are taken by other reviewers "
        "or there are none. Tick “Show items others are on” to go through them anyway.",
    )
    return HttpResponseRedirect(with_qs(reverse("review:queue"), qs) + f"#c{pk}")


@login_required
@require_GET
def candidate_next(request: HttpRequest, pk: int) -> HttpResponse:
    """Next (``n``): the following candidate nobody else is on, taken for the reviewer."""
    return _go(request, pk, forward=True)


@login_required
@require_GET
def candidate_previous(request: HttpRequest, pk: int) -> HttpResponse:
    """Previous (``p``): the preceding candidate nobody else is on, taken for the reviewer."""
    return _go(request, pk, forward=False)


def viewing_context(request: HttpRequest, candidate: Candidate) -> dict[str, Any]:
    """The candidate page's part: a reviewer opening a pending candidate marks it (unless another
    reviewer's marker is live: then the page says who is reviewing it); ``viewing`` is that other
    reviewer's marker, if any."""
    if candidate.status != Candidate.Status.PENDING:
        return {"viewing": None, "viewing_seconds": None}
    if not can_review(request):  # read-only users see who is on it, and never mark it
        return {"viewing": viewing_holder(candidate.pk), "viewing_seconds": None}
    holder = None
    if not viewing.viewing_mark(pk=candidate.pk, reviewer=reviewer_of(request)):
        holder = viewing_holder(candidate.pk)
    return {"viewing": holder, "viewing_seconds": viewing.viewing_seconds()}


@login_required
@require_POST
def candidate_viewing(request: HttpRequest, pk: int) -> HttpResponse:
    """The open candidate page renews its marker (CSRF-checked, no body). 204: the reviewer holds
    it; 409 with ``{"viewer": name}``: another reviewer's marker is live; 410: the candidate is no
    longer pending (there is nothing to mark)."""
    if not can_review(request):
        return forbidden_page(request)
    status = Candidate.objects.filter(pk=pk).values_list("status", flat=True).first()
    if status is None:
        return not_found_page(request)
    if viewing.viewing_mark(pk=pk, reviewer=reviewer_of(request)):
        return HttpResponse(status=204)
    if status != Candidate.Status.PENDING:
        return HttpResponse(status=410)
    holder = viewing_holder(pk)
    return JsonResponse({"viewer": holder.username if holder is not None else None}, status=409)
