"""Take a decision back from the candidate page: reopen a rejected candidate, retire or revert
the Experience/Skill an approved one produced. Reviewers only; POST/redirect/GET; a stale
version or revision is the 409 conflict page; each action is audited by its service."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.views.decorators.http import require_http_methods

from powercontext.core.exceptions import ArtifactNotFound, InvalidRequest
from review import services
from review.forms import ReopenForm, RetireForm, RevertForm
from review.models import Candidate
from review.selectors.governance import four_eyes_enabled
from review.views.candidate import _action_target, _conflict
from review.views.common import (
    CONFLICTS,
    acting_on,
    action_login_required,
    candidate_url,
    filterset_for,
    not_found_page,
    reviewer_of,
)


def _act(
    request: HttpRequest,
    pk: int,
    *,
    action: str,
    form_class: type[forms.Form],
    run: Callable[[Candidate, dict[str, object]], str],
) -> HttpResponse:
    qs = filterset_for(request).querystring()
    candidate = _action_target(request, pk, qs)
    if isinstance(candidate, HttpResponse):
        return candidate
    url = candidate_url(pk, qs)
    form = form_class(request.POST)
    if not form.is_valid():
        problems = "; ".join(
            f"{name}: {' '.join(str(e) for e in errors)}" for name, errors in form.errors.items()
        )
        messages.error(request, f"Not done ({action}): {problems}")
        return HttpResponseRedirect(url)
    data = form.cleaned_data
    try:
        message = run(candidate, data)
    except CONFLICTS as exc:
        expected = data.get("expected_version")
        return _conflict(
            request, pk, exc, action=action, expected_version=expected if isinstance(expected, int) else None
        )
    except ArtifactNotFound:
        return not_found_page(request)
    except InvalidRequest as exc:
        messages.error(request, exc.message if not exc.details else str(exc.details["errors"][0]["msg"]))
    else:
        messages.success(request, message)
    return HttpResponseRedirect(url)


def _head_action(request: HttpRequest, candidate: Candidate, data: dict[str, object]) -> dict[str, Any]:
    """What retire and revert both name: the approved candidate's artifact head at the revision
    the page showed, the reason and the reviewer."""
    head = candidate.result_head
    if candidate.status != Candidate.Status.APPROVED or head is None:
        raise InvalidRequest("Only an approved candidate's artifact can be retired or reverted.")
    return {
        "scope_id": candidate.scope_id,
        "family": head.family,
        "artifact_id": head.artifact_id,
        "expected_revision": int(str(data["expected_revision"])),
        "reason": str(data["reason"]),
        "reviewer": reviewer_of(request),
        "candidate": candidate,
    }


Run = Callable[[HttpRequest, Candidate, dict[str, object]], str]


def _reopen(request: HttpRequest, candidate: Candidate, data: dict[str, object]) -> str:
    reopened = services.candidate_reopen(
        **acting_on(request, candidate),
        expected_version=int(str(data["expected_version"])),
        reason=str(data["reason"]),
    )
    return f"Reopened candidate #{candidate.pk} as candidate #{reopened.pk} (pending); the rejection stays in its history."


def _retire(request: HttpRequest, candidate: Candidate, data: dict[str, object]) -> str:
    head = services.artifact_retire(**_head_action(request, candidate, data))
    return (
        f"Retired {head.family}/{head.artifact_id} at revision {head.current_revision}: no longer recalled."
    )


def _revert(request: HttpRequest, candidate: Candidate, data: dict[str, object]) -> str:
    if four_eyes_enabled():
        where = _head_action(request, candidate, data)
        del where["candidate"]
        proposed = services.artifact_revert_propose(
            **where, to_revision=int(str(data["to_revision"])), expected_state=str(data["expected_state"])
        )
        return (
            f"Proposed reverting {where['family']}/{where['artifact_id']} to revision {data['to_revision']} "
            f"as candidate #{proposed.pk}: four-eyes review is on, so another reviewer approves it."
        )
    head = services.artifact_revert(
        **_head_action(request, candidate, data),
        to_revision=int(str(data["to_revision"])),
        expected_state=str(data["expected_state"]),
    )
    return (
        f"Reverted {head.family}/{head.artifact_id}: revision {head.current_revision} "
        f"has the content of revision {data['to_revision']}."
    )


def _take_back_view(action: str, form_class: type[forms.Form], run: Run) -> Callable[..., HttpResponse]:
    """The POST view of one take-back action (``_act`` with ``run`` for the request)."""

    @action_login_required
    @require_http_methods(["GET", "POST"])
    def view(request: HttpRequest, pk: int) -> HttpResponse:
        return _act(request, pk, action=action, form_class=form_class, run=lambda c, d: run(request, c, d))

    view.__name__ = view.__qualname__ = f"candidate_{action}"
    return view


candidate_reopen = _take_back_view("reopen", ReopenForm, _reopen)
candidate_retire = _take_back_view("retire", RetireForm, _retire)
candidate_revert = _take_back_view("revert", RevertForm, _revert)
