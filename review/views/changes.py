"""Request changes and comment on a candidate, and Undo of a change request, in the Inbox
(``review.services.changes``): like the other decisions, a POST guarded by ``expected_version``
that commits at once, then POST/redirect/GET; a stale or decided candidate renders the 409
conflict page, a form error comes back to the candidate page with the posted text."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.views.decorators.http import require_http_methods, require_POST

from powercontext.core.exceptions import InvalidRequest
from review.forms import ChangesForm, UndoForm, add_service_errors
from review.models import Candidate
from review.services import changes as changes_service
from review.services.undo import UndoForbidden, UndoOutcome
from review.views import sharing
from review.views.candidate import _action_target, _conflict
from review.views.common import (
    CONFLICTS,
    acting_on,
    action_login_required,
    can_review,
    candidate_url,
    decided_url,
    filterset_for,
    forbidden_page,
    redirect_to_form,
    reviewer_of,
    with_qs,
)
from review.views.undo import offer_undo


def _post_to_thread(
    request: HttpRequest,
    pk: int,
    action: str,
    call: Callable[..., object],
    done: Callable[[int, int, str], HttpResponse],
) -> HttpResponse:
    """The shared skeleton of the thread's two POSTs: validate the form, ``call`` the service
    (guarded by ``expected_version``), and answer with ``done(pk, expected_version, qs)``; a stale
    or decided candidate renders the conflict page, a form error returns to the candidate page
    with the posted text."""
    qs = filterset_for(request).querystring()
    candidate = _action_target(request, pk, qs)
    if isinstance(candidate, HttpResponse):
        return candidate
    form = ChangesForm(request.POST)
    if form.is_valid():
        expected = form.cleaned_data["expected_version"]
        try:
            call(
                **acting_on(request, candidate),
                expected_version=expected,
                comment=form.cleaned_data["comment"],
                field_comments=form.field_comments(),
            )
        except CONFLICTS as exc:
            return _conflict(request, pk, exc, action=action, expected_version=expected)
        except InvalidRequest as exc:
            add_service_errors(form, exc)
        else:
            return done(pk, expected, qs)
    return redirect_to_form(request, pk, "changes", form, candidate_url(pk, qs) + "#changes")


@action_login_required
@require_http_methods(["GET", "POST"])
def candidate_request_changes(request: HttpRequest, pk: int) -> HttpResponse:
    """Send the candidate back to its proposer, then go on to the next candidate, whose page
    offers Undo (the toast posts to ``changes_undo``)."""

    def done(pk: int, expected: int, qs: str) -> HttpResponse:
        message = format_html(
            'Requested changes on candidate #{} (version {}); it waits for its proposer. <a href="{}" '
            "data-result>View the thread</a>",
            pk,
            expected,
            decided_url(pk, Candidate.Status.CHANGES_REQUESTED),
        )
        messages.success(request, message, extra_tags=f"changes:{pk}")
        offer_undo(request, [pk], f"Requested changes on #{pk}.", qs, url=reverse("review:changes-undo"))
        return sharing.after_decision(request, pk)

    return _post_to_thread(request, pk, "request changes", changes_service.candidate_request_changes, done)


@action_login_required
@require_http_methods(["GET", "POST"])
def candidate_comment(request: HttpRequest, pk: int) -> HttpResponse:
    """A comment without a decision: back to the candidate page, which shows it in the thread."""

    def done(pk: int, expected: int, qs: str) -> HttpResponse:
        messages.success(request, f"Commented on candidate #{pk}.", extra_tags=f"changes:{pk}")
        return HttpResponseRedirect(candidate_url(pk, qs) + "#thread")

    return _post_to_thread(request, pk, "comment", changes_service.candidate_comment, done)


@login_required
@require_POST
def changes_undo(request: HttpRequest) -> HttpResponse:
    """Withdraw change requests (one, or a bulk batch): pending again at the same version."""
    if not can_review(request):
        return forbidden_page(request)
    form = UndoForm(request.POST)
    qs = filterset_for(request).querystring()
    queue = with_qs(reverse("review:queue"), qs)
    if not form.is_valid():
        messages.error(request, "The Undo form was malformed; nothing was undone.")
        return _see_other(queue)
    outcomes = changes_service.changes_undo_bulk(
        candidate_pks=form.cleaned_data["candidate"], reviewer=reviewer_of(request)
    )
    done = [o.pk for o in outcomes if o.outcome == "done"]
    refused = [o for o in outcomes if o.outcome != "done"]
    if not done:
        forbidden = all(o.code == UndoForbidden.code for o in refused)
        return render(
            request,
            "review/undo_refused.html",
            {
                "refused": [UndoOutcome(o.pk, None, o.code, o.message) for o in refused],
                "filter_qs": qs,
                "can_review": True,
            },
            status=403 if forbidden else 409,
        )
    text = format_html(
        "Undone: the change request on {} is withdrawn; pending again.",
        format_html_join(", ", '<a href="{}">#{}</a>', ((candidate_url(pk, qs), pk) for pk in done)),
    )
    if refused:
        text = format_html(
            "{} Not undone: {}.",
            text,
            format_html_join(
                "; ",
                '<a href="{}">#{}</a> ({})',
                ((candidate_url(o.pk, qs), o.pk, o.message) for o in refused),
            ),
        )
    (messages.warning if refused else messages.success)(request, text)
    return _see_other(candidate_url(done[0], qs) if len(outcomes) == 1 else queue)


def _see_other(url: str) -> HttpResponseRedirect:
    response = HttpResponseRedirect(url)
    response.status_code = 303
    return response
