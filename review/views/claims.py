"""Claims: "Assign to me" / "Unassign" on one candidate (from its page or from the queue).

A claim is advisory (see ``review.services.candidate_claim``): it shows who is working on an
item and never blocks a decision. Both actions are POST + CSRF and redirect (303) back to the
page they came from, with a message; a claim that changed meanwhile is reported, not taken over.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from powercontext.core.exceptions import CandidateTerminal
from review import services
from review.forms import ClaimForm
from review.models import Candidate
from review.views.candidate import _action_target
from review.views.common import action_login_required, candidate_url, filterset_for, reviewer_of, with_qs


def _back(request: HttpRequest, pk: int, form: ClaimForm) -> HttpResponseRedirect:
    qs = filterset_for(request).querystring()
    to_queue = request.GET.get("back") == "queue" or (
        form.is_valid() and form.cleaned_data.get("back") == "queue"
    )
    response = HttpResponseRedirect(
        with_qs(reverse("review:queue"), qs) if to_queue else candidate_url(pk, qs)
    )
    response.status_code = 303
    return response


def _claim_action(
    act: Callable[[HttpRequest, Candidate, ClaimForm], None],
) -> Callable[[HttpRequest, int], HttpResponse]:
    """The view around one claim action: the log-in and method checks, the candidate (or the
    answer instead of it, see ``_action_target``), the posted form, then ``act`` (which calls the
    service and leaves a message) and the 303 back to the page the reviewer came from."""

    @action_login_required
    @require_http_methods(["GET", "POST"])
    @wraps(act)
    def view(request: HttpRequest, pk: int) -> HttpResponse:
        candidate = _action_target(request, pk, filterset_for(request).querystring())
        if isinstance(candidate, HttpResponse):
            return candidate
        form = ClaimForm(request.POST)
        act(request, candidate, form)
        return _back(request, pk, form)

    return view


@_claim_action
def candidate_claim(request: HttpRequest, candidate: Candidate, form: ClaimForm) -> None:
    pk = candidate.pk
    if not form.is_valid():
        messages.error(request, "The assignment form was malformed; reload the page.")
        return
    seen = form.cleaned_data.get("expected_claimant") or None
    try:
        outcome = services.candidate_claim(
            scope_id=candidate.scope_id,
            candidate_id=candidate.candidate_id,
            reviewer=reviewer_of(request),
            expected_claimant=seen,
        )
    except CandidateTerminal:
        messages.error(request, f"Candidate #{pk} is already decided; there is nothing to assign.")
    except services.ClaimChanged:
        messages.warning(
            request,
            f"The assignment of candidate #{pk} changed since you looked; check who has it now "
            "before taking it over.",
        )
    else:
        if outcome.previous is not None:
            messages.success(
                request, f"Took over candidate #{pk} from {outcome.previous}; it is assigned to you."
            )
        else:
            messages.success(request, f"Candidate #{pk} is assigned to you.")


@_claim_action
def candidate_unclaim(request: HttpRequest, candidate: Candidate, form: ClaimForm) -> None:
    outcome = services.candidate_unclaim(
        scope_id=candidate.scope_id, candidate_id=candidate.candidate_id, reviewer=reviewer_of(request)
    )
    if outcome.changed:
        messages.success(request, f"Candidate #{candidate.pk} is no longer assigned to you.")
    else:
        messages.info(request, f"Candidate #{candidate.pk} was not assigned to you; nothing changed.")
