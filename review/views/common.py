"""Shared plumbing of the Review Inbox views: permissions, redirects, form stashing, error pages."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import NON_FIELD_ERRORS
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from powercontext.core.exceptions import ArtifactConflict, CandidateConflict, CandidateTerminal
from review.filters import CandidateQueueFilter
from review.models import Candidate
from review.selectors.candidate import candidate_load

REVIEW_PERMISSION = "review.review_candidate"
CONFLICTS = (CandidateConflict, CandidateTerminal, ArtifactConflict)


def can_review(request: HttpRequest) -> bool:
    return bool(request.user.has_perm(REVIEW_PERMISSION))


def reviewer_of(request: HttpRequest) -> User:
    """The logged-in reviewer (views call it after ``can_review``)."""
    assert isinstance(request.user, User)
    return request.user


def acting_on(request: HttpRequest, candidate: Candidate) -> dict[str, Any]:
    """The keyword arguments every candidate service takes: which candidate, and who acts."""
    return {
        "scope_id": candidate.scope_id,
        "candidate_id": candidate.candidate_id,
        "reviewer": reviewer_of(request),
    }


def small_int(value: str | None) -> int | None:
    return (
        int(value) if value is not None and value.isascii() and value.isdigit() and len(value) <= 18 else None
    )


def filterset_for(request: HttpRequest) -> CandidateQueueFilter:
    return CandidateQueueFilter(request.GET, queryset=Candidate.objects.all(), request=request)


def with_qs(url: str, qs: str) -> str:
    return f"{url}?{qs}" if qs else url


def candidate_url(pk: int, qs: str = "") -> str:
    return with_qs(reverse("review:candidate", args=[pk]), qs)


def decided_url(pk: int, status: str) -> str:
    """The candidate page of a just-decided candidate, within the list it now belongs to."""
    return candidate_url(pk, urlencode({"status": status}))


def action_login_required(
    view: Callable[..., HttpResponse],
) -> Callable[..., HttpResponse]:
    """``login_required`` for the POST-only action URLs of one candidate: after logging in, the
    reviewer lands on the candidate page (where the browser restores the draft), not on an action
    URL that a GET cannot answer."""

    @wraps(view)
    def wrapped(request: HttpRequest, pk: int) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(candidate_url(pk, filterset_for(request).querystring()))
        return view(request, pk)

    return wrapped


# --- form errors survive a redirect (POST/redirect/GET) ---------------------------------------


def stash_key(pk: int) -> str:
    return f"review:form:{pk}"


def stash_form(request: HttpRequest, pk: int, kind: str, form: forms.Form, *, key: str | None = None) -> None:
    """Keep a failed form's posted values and errors for the page it is shown on (under ``key``;
    default: the candidate ``pk``'s)."""
    request.session[key or stash_key(pk)] = {
        "kind": kind,
        "data": {k: v for k, v in request.POST.items() if k != "csrfmiddlewaretoken"},
        "errors": [
            [None if name == NON_FIELD_ERRORS else name, str(message)]
            for name, errors in form.errors.items()
            for message in errors
        ],
    }


def unstash_form(request: HttpRequest, pk: int, kind: str, form_class: type[forms.Form]) -> Any:
    """The failed form of ``kind`` kept for this candidate (bound, with its errors), once."""
    stash = request.session.get(stash_key(pk))
    if not isinstance(stash, dict) or stash.get("kind") != kind:
        return None
    del request.session[stash_key(pk)]
    return with_stashed_errors(form_class(stash.get("data") or {}), stash)


def with_stashed_errors(form: forms.Form, stash: dict[str, Any]) -> forms.Form:
    """``form`` (bound to the stashed values) validated, with the stashed errors it did not
    find again added back."""
    form.is_valid()
    for name, message in stash.get("errors") or []:
        if message not in form.errors.get(name or NON_FIELD_ERRORS, []):
            form.add_error(name if name in form.fields else None, message)
    return form


def redirect_to_form(request: HttpRequest, pk: int, kind: str, form: forms.Form, url: str) -> HttpResponse:
    stash_form(request, pk, kind, form)
    response = HttpResponseRedirect(url)
    response.status_code = 303  # See Other: the browser GETs the page of the form
    return response


def reviewable(request: HttpRequest, pk: int) -> Candidate | HttpResponse:
    """The candidate a reviewer acts on, or the answer instead: 403 for a viewer, 404 for an
    unknown pk."""
    if not can_review(request):
        return forbidden_page(request)
    candidate = candidate_load(pk)
    return candidate if candidate is not None else not_found_page(request)


def reviewer_form_view(
    view: Callable[[HttpRequest, int, Candidate], HttpResponse],
) -> Callable[[HttpRequest, int], HttpResponse]:
    """A reviewer's form page on one candidate (GET shows it, POST saves it): logged in, a
    reviewer (403), a known candidate (404); the view gets the loaded candidate."""

    @login_required
    @require_http_methods(["GET", "POST"])
    @wraps(view)
    def wrapped(request: HttpRequest, pk: int) -> HttpResponse:
        candidate = reviewable(request, pk)
        if isinstance(candidate, HttpResponse):
            return candidate
        return view(request, pk, candidate)

    return wrapped


def bad_request_page(request: HttpRequest, text: str) -> HttpResponse:
    """A 400 in the Inbox's look: a request no page of it sends, saying what was wrong."""
    context = {"status": 400, "title": "Bad request", "text": text, "can_review": can_review(request)}
    return render(request, "error.html", context, status=400)


def forbidden_page(request: HttpRequest) -> HttpResponse:
    return render(request, "review/forbidden.html", {"can_review": False}, status=403)


def not_found_page(request: HttpRequest) -> HttpResponse:
    return render(request, "review/not_found.html", {"can_review": can_review(request)}, status=404)
