"""Claims: "Assign to me" / "Unassign" on one candidate (from its page or from the queue).

A claim is advisory (see ``review.services.candidate_claim``): it shows who is working on an
item and never blocks a decision. Both actions are POST + CSRF and redirect (303) back to the
page they came from, with a message; a claim that changed meanwhile is reported, not taken over.
From the queue, with JavaScript, "Assign to me" is posted in the background (``async=1``, a JSON
answer), so the page keeps its bulk selection and scroll position.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods

from powercontext.core.exceptions import CandidateTerminal
from review import services
from review.forms import ClaimForm
from review.models import Candidate
from review.views.candidate import _action_target
from review.views.common import (
    acting_on,
    action_login_required,
    candidate_url,
    filterset_for,
    small_int,
    with_qs,
)


def _back(request: HttpRequest, pk: int, form: ClaimForm) -> HttpResponseRedirect:
    """303 to the page the reviewer came from: the candidate page, or the queue (its filters, the
    page it showed, and the row as the fragment, so the browser scrolls back to it)."""
    qs = filterset_for(request).querystring()
    to_queue = request.GET.get("back") == "queue" or (
        form.is_valid() and form.cleaned_data.get("back") == "queue"
    )
    if to_queue:
        paging = [(key, request.GET[key]) for key in ("after", "before") if small_int(request.GET.get(key))]
        query = "&".join(part for part in (qs, urlencode(paging)) if part)
        url = with_qs(reverse("review:queue"), query) + f"#c{pk}"
    else:
        url = candidate_url(pk, qs)
    response = HttpResponseRedirect(url)
    response.status_code = 303
    return response


# What an action says: its message level and text (a message for the next page, or, for a
# background post from the queue, the JSON answer).
Said = tuple[int, str]


def _claim_action(
    act: Callable[[HttpRequest, Candidate, ClaimForm], Said],
) -> Callable[[HttpRequest, int], HttpResponse]:
    """The view around one claim action: the log-in and method checks, the candidate (or the
    answer instead of it, see ``_action_target``), the posted form, then ``act`` (which calls the
    service and says what happened) and the 303 back to the page the reviewer came from, with the
    message. ``async=1`` (the queue's "Assign to me" posted in the background, see ``_inbox.js``):
    the answer is ``{"message": ...}`` instead, 200 when it succeeded, else 409."""

    @action_login_required
    @require_http_methods(["GET", "POST"])
    @wraps(act)
    def view(request: HttpRequest, pk: int) -> HttpResponse:
        candidate = _action_target(request, pk, filterset_for(request).querystring())
        if isinstance(candidate, HttpResponse):
            return candidate
        form = ClaimForm(request.POST)
        level, text = act(request, candidate, form)
        if request.POST.get("async") == "1":
            return JsonResponse({"message": text}, status=200 if level == messages.SUCCESS else 409)
        messages.add_message(request, level, text)
        return _back(request, pk, form)

    return view


@_claim_action
def candidate_claim(request: HttpRequest, candidate: Candidate, form: ClaimForm) -> Said:
    pk = candidate.pk
    if not form.is_valid():
        return messages.ERROR, "The assignment form was malformed; reload the page."
    seen = form.cleaned_data.get("expected_claimant") or None
    try:
        outcome = services.candidate_claim(
            **acting_on(request, candidate),
            expected_claimant=seen,
        )
    except CandidateTerminal:
        return messages.ERROR, f"Candidate #{pk} is already decided; there is nothing to assign."
    except services.ClaimChanged:
        return (
            messages.WARNING,
            f"The assignment of candidate #{pk} changed since you looked; check who has it now "
            "before taking it over.",
        )
    if outcome.previous is not None:
        return messages.SUCCESS, f"Took over candidate #{pk} from {outcome.previous}; it is assigned to you."
    return messages.SUCCESS, f"Candidate #{pk} is assigned to you."


@_claim_action
def candidate_unclaim(request: HttpRequest, candidate: Candidate, form: ClaimForm) -> Said:
    outcome = services.candidate_unclaim(**acting_on(request, candidate))
    if outcome.changed:
        return messages.SUCCESS, f"Candidate #{candidate.pk} is no longer assigned to you."
    return messages.INFO, f"Candidate #{candidate.pk} was not assigned to you; nothing changed."
