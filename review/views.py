"""Review Inbox views: parse, authorize, call one service or selector, render.

Every page needs a logged-in user. Reviewers (``review.review_candidate``) may approve, reject and
revise; other users get the same pages read-only, and their POSTs are 403. Writes go through
``review.services`` only, each guarded by the hidden ``expected_version`` (compare-and-swap); a
stale or terminal candidate, or a target that moved on, renders the conflict page (409) with the
current version, never a 500. Every POST redirects (POST/redirect/GET): on success to the next
candidate, on a form error back to the page of the form, which shows the errors and the posted
text once (they travel in the session), so a reload never resubmits.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from functools import wraps
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import NON_FIELD_ERRORS
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET, require_http_methods

from powercontext.exceptions import (
    ArtifactConflict,
    CandidateConflict,
    CandidateTerminal,
    Conflict,
    InvalidRequest,
)
from review import services
from review.filters import CandidateQueueFilter
from review.forms import REVISE_FORMS, ApproveForm, BulkForm, RebaseForm, RejectForm, add_service_errors
from review.models import Candidate, ReviewDecision
from review.selectors import candidate as candidate_selectors
from review.selectors import evidence as evidence_selectors
from review.selectors import queue as queue_selectors
from review.selectors import reasons as reason_selectors

REVIEW_PERMISSION = "review.review_candidate"
CONFLICTS = (CandidateConflict, CandidateTerminal, ArtifactConflict)


def _can_review(request: HttpRequest) -> bool:
    return bool(request.user.has_perm(REVIEW_PERMISSION))


def _reviewer(request: HttpRequest) -> User:
    """The logged-in reviewer (views call it after ``_can_review``)."""
    assert isinstance(request.user, User)
    return request.user


def _int(value: str | None) -> int | None:
    return (
        int(value) if value is not None and value.isascii() and value.isdigit() and len(value) <= 18 else None
    )


def _filterset(request: HttpRequest) -> CandidateQueueFilter:
    return CandidateQueueFilter(request.GET, queryset=Candidate.objects.all())


def _with_qs(url: str, qs: str) -> str:
    return f"{url}?{qs}" if qs else url


def _candidate_url(pk: int, qs: str = "") -> str:
    return _with_qs(reverse("review:candidate", args=[pk]), qs)


def action_login_required(
    view: Callable[..., HttpResponse],
) -> Callable[..., HttpResponse]:
    """``login_required`` for the POST-only action URLs of one candidate: after logging in, the
    reviewer lands on the candidate page (where the browser restores the draft), not on an action
    URL that a GET cannot answer."""

    @wraps(view)
    def wrapped(request: HttpRequest, pk: int) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(_candidate_url(pk, _filterset(request).querystring()))
        return view(request, pk)

    return wrapped


# --- form errors survive a redirect (POST/redirect/GET) ---------------------------------------


def _stash_key(pk: int) -> str:
    return f"review:form:{pk}"


def _stash_form(request: HttpRequest, pk: int, kind: str, form: forms.Form) -> None:
    """Keep a failed form's posted values and errors for the page it is shown on."""
    request.session[_stash_key(pk)] = {
        "kind": kind,
        "data": {k: v for k, v in request.POST.items() if k != "csrfmiddlewaretoken"},
        "errors": [
            [None if name == NON_FIELD_ERRORS else name, str(message)]
            for name, errors in form.errors.items()
            for message in errors
        ],
    }


def _unstash_form(request: HttpRequest, pk: int, kind: str, form_class: type[forms.Form]) -> Any:
    """The failed form of ``kind`` kept for this candidate (bound, with its errors), once."""
    stash = request.session.get(_stash_key(pk))
    if not isinstance(stash, dict) or stash.get("kind") != kind:
        return None
    del request.session[_stash_key(pk)]
    form = form_class(stash.get("data") or {})
    form.is_valid()
    for name, message in stash.get("errors") or []:
        if message not in form.errors.get(name or NON_FIELD_ERRORS, []):
            form.add_error(name if name in form.fields else None, message)
    return form


def _redirect_to_form(request: HttpRequest, pk: int, kind: str, form: forms.Form, url: str) -> HttpResponse:
    _stash_form(request, pk, kind, form)
    response = HttpResponseRedirect(url)
    response.status_code = 303  # See Other: the browser GETs the page of the form
    return response


def _forbidden(request: HttpRequest) -> HttpResponse:
    return render(request, "review/forbidden.html", {"can_review": False}, status=403)


def _not_found(request: HttpRequest) -> HttpResponse:
    return render(request, "review/not_found.html", {"can_review": _can_review(request)}, status=404)


@login_required
@require_GET
def queue(request: HttpRequest) -> HttpResponse:
    filterset = _filterset(request)
    status = filterset.status_value if filterset.is_valid() else ""
    if filterset.is_valid():
        rows = filterset.qs
        page = queue_selectors.queue_page(
            rows,
            ascending=queue_selectors.ascending_for(status),
            after=_int(request.GET.get("after")),
            before=_int(request.GET.get("before")),
            split=not filterset.one_family,
        )
        matching = queue_selectors.capped_count(rows)
    else:
        page = queue_selectors.QueuePage(rows=[], next_after=None, prev_before=None, is_first=True)
        matching = queue_selectors.CappedCount(0, False)
    return render(
        request,
        "review/queue.html",
        {
            "filter_form": filterset.form,
            "filter_qs": filterset.querystring(),
            "status": status,
            "page": page,
            "matching": matching,
            "counts": queue_selectors.queue_counts(),
            "can_review": _can_review(request),
            "bulk": _can_review(request) and status == Candidate.Status.PENDING and bool(page.rows),
            "bulk_max": queue_selectors.BULK_MAX,
            "seen": int(timezone.now().timestamp() * 1_000_000),
            "canned_reasons": reason_selectors.canned_reasons() if _can_review(request) else [],
        },
    )


CONFLICT_WORDS = {
    "candidate_conflict": "changed since you looked",
    "candidate_terminal": "already decided",
    "artifact_conflict": "its target moved on",
    "candidate_not_found": "no longer exists",
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
        ((_candidate_url(o.pk, qs), o.pk, CONFLICT_WORDS.get(o.code or "", "conflict")) for o in failed),
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
    them), each in its own transaction; back to the queue with "8 approved, 2 conflicts"."""
    if not _can_review(request):
        return _forbidden(request)
    filterset = _filterset(request)
    qs = filterset.querystring()
    back = HttpResponseRedirect(_with_qs(reverse("review:queue"), qs))
    back.status_code = 303
    form = BulkForm(request.POST)
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
        seen = datetime.fromtimestamp(data["seen"] / 1_000_000, tz=UTC)
        items = queue_selectors.matching_items(filterset.qs, seen=seen)
    else:
        items = data["item"]
    decision = (
        ReviewDecision.Decision.APPROVED
        if data["decision"] == "approve"
        else ReviewDecision.Decision.REJECTED
    )
    outcomes = services.candidates_decide_bulk(
        items=items, decision=decision, reason=data["reason"] or None, reviewer=_reviewer(request)
    )
    tags = "bulk-reject" if decision == ReviewDecision.Decision.REJECTED else ""
    messages.success(request, _bulk_message(outcomes, str(decision), qs), extra_tags=tags)
    return back


def _candidate_context(
    request: HttpRequest,
    candidate: Candidate,
    *,
    approve_form: ApproveForm | None = None,
    reject_form: RejectForm | None = None,
) -> dict[str, Any]:
    summary = candidate_selectors.candidate_summary(candidate)
    filterset = _filterset(request)
    next_pk = prev_pk = None
    if filterset.is_valid():
        ascending = queue_selectors.ascending_for(filterset.status_value)
        split = not filterset.one_family
        next_pk = queue_selectors.neighbour(filterset.qs, candidate.pk, ascending=ascending, split=split)
        prev_pk = queue_selectors.neighbour(
            filterset.qs, candidate.pk, ascending=ascending, forward=False, split=split
        )
    evidence = None
    if summary.latest is not None:
        evidence = evidence_selectors.evidence_resolve(
            scope_id=candidate.scope_id,
            family=candidate.family,
            version=summary.latest,
            status=candidate.status,
        )
    initial = {"expected_version": candidate.version}
    approve_form = approve_form or _unstash_form(request, candidate.pk, "approve", ApproveForm)
    reject_form = reject_form or _unstash_form(request, candidate.pk, "reject", RejectForm)
    return {
        "candidate": summary,
        "evidence": evidence,
        "filter_qs": filterset.querystring(),
        "next_pk": next_pk,
        "prev_pk": prev_pk,
        "can_review": _can_review(request),
        "approve_form": approve_form or ApproveForm(initial=initial),
        "reject_form": reject_form or RejectForm(initial=initial),
        "canned_reasons": (
            reason_selectors.canned_reasons() if summary.is_pending and _can_review(request) else []
        ),
    }


@login_required
@require_GET
def candidate_detail(request: HttpRequest, pk: int) -> HttpResponse:
    if (candidate := candidate_selectors.candidate_load(pk)) is None:
        return _not_found(request)
    return render(request, "review/candidate.html", _candidate_context(request, candidate))


def _conflict(
    request: HttpRequest, pk: int, exc: Conflict, *, action: str, expected_version: int | None
) -> HttpResponse:
    """The 409 page: what was attempted, and the candidate as it is now (re-read after the
    failed transaction), with what changed since the version the reviewer saw."""
    candidate = candidate_selectors.candidate_load(pk)
    assert candidate is not None  # candidates are never deleted (PROTECT)
    summary = candidate_selectors.candidate_summary(candidate)
    changes = None
    seen = None
    if expected_version is not None and expected_version != candidate.version:
        versions = {v.version: v for v in candidate_selectors.candidate_versions(candidate)}
        seen = versions.get(expected_version)
        if seen is not None and summary.latest is not None:
            changes = candidate_selectors.history_items(candidate.family, [seen, summary.latest])[1].changes
    current_head = (exc.details or {}).get("current") if isinstance(exc, ArtifactConflict) else None
    return render(
        request,
        "review/conflict.html",
        {
            "candidate": summary,
            "action": action,
            "code": exc.code,
            "message": exc.message,
            "expected_version": expected_version,
            "seen_version": seen,
            "changes": changes,
            "artifact_conflict": isinstance(exc, ArtifactConflict),
            "current_head": current_head,
            "filter_qs": _filterset(request).querystring(),
            "can_review": _can_review(request),
        },
        status=409,
    )


def _after_decision(request: HttpRequest, pk: int) -> HttpResponseRedirect:
    """Go on to the next candidate of the same queue, or back to the queue when none is left."""
    filterset = _filterset(request)
    qs = filterset.querystring()
    if filterset.is_valid():
        next_pk = queue_selectors.neighbour(
            filterset.qs,
            pk,
            ascending=queue_selectors.ascending_for(filterset.status_value),
            split=not filterset.one_family,
        )
        if next_pk is not None:
            return HttpResponseRedirect(_candidate_url(next_pk, qs))
    return HttpResponseRedirect(_with_qs(reverse("review:queue"), qs))


def _decide(
    request: HttpRequest,
    pk: int,
    *,
    action: str,
    form_class: type[ApproveForm] | type[RejectForm],
    decide: Callable[[Candidate, dict[str, Any]], str],
) -> HttpResponse:
    """Approve and reject: load, validate the form, call the service, then go on to the next
    candidate (or back to the candidate page with the form's errors, or the 409 conflict page).
    A GET (a stale bookmark, a log-in's ``next``) goes to the candidate page."""
    if request.method == "GET":
        return HttpResponseRedirect(_candidate_url(pk, _filterset(request).querystring()))
    if not _can_review(request):
        return _forbidden(request)
    candidate = candidate_selectors.candidate_load(pk)
    if candidate is None:
        return _not_found(request)
    form = form_class(request.POST)
    if form.is_valid():
        expected = form.cleaned_data["expected_version"]
        try:
            message = decide(candidate, form.cleaned_data)
        except CONFLICTS as exc:
            return _conflict(request, pk, exc, action=action, expected_version=expected)
        except InvalidRequest as exc:
            add_service_errors(form, exc)
        else:
            # Tells the browser the draft of this form was submitted (see inbox.js).
            messages.success(request, message, extra_tags=f"{action}:{pk}")
            return _after_decision(request, pk)
    url = _candidate_url(pk, _filterset(request).querystring())
    return _redirect_to_form(request, pk, action, form, url)


@action_login_required
@require_http_methods(["GET", "POST"])
def candidate_approve(request: HttpRequest, pk: int) -> HttpResponse:
    def approve(candidate: Candidate, data: dict[str, Any]) -> str:
        approved = services.candidate_approve(
            scope_id=candidate.scope_id,
            candidate_id=candidate.candidate_id,
            expected_version=data["expected_version"],
            reviewer=_reviewer(request),
        )
        message = f"Approved candidate #{pk} (version {data['expected_version']})"
        if approved.result_head is not None:
            head = approved.result_head
            message += f" as {head.family}/{head.artifact_id} revision {approved.result_revision}"
        return message + "."

    return _decide(request, pk, action="approve", form_class=ApproveForm, decide=approve)


@action_login_required
@require_http_methods(["GET", "POST"])
def candidate_reject(request: HttpRequest, pk: int) -> HttpResponse:
    def reject(candidate: Candidate, data: dict[str, Any]) -> str:
        services.candidate_reject(
            scope_id=candidate.scope_id,
            candidate_id=candidate.candidate_id,
            expected_version=data["expected_version"],
            reason=data["reason"],
            reviewer=_reviewer(request),
        )
        return f"Rejected candidate #{pk} (version {data['expected_version']})."

    return _decide(request, pk, action="reject", form_class=RejectForm, decide=reject)


@action_login_required
@require_http_methods(["GET", "POST"])
def candidate_rebase(request: HttpRequest, pk: int) -> HttpResponse:
    """Retarget a stale pending update to its Artifact's current head (a revise), then show the
    candidate again with the recomputed diff."""
    qs = _filterset(request).querystring()
    if request.method == "GET":
        return HttpResponseRedirect(_candidate_url(pk, qs))
    if not _can_review(request):
        return _forbidden(request)
    candidate = candidate_selectors.candidate_load(pk)
    if candidate is None:
        return _not_found(request)
    form = RebaseForm(request.POST)
    if not form.is_valid():
        messages.error(request, "The rebase form was malformed; reload the page.")
        return HttpResponseRedirect(_candidate_url(pk, qs))
    expected, onto = form.cleaned_data["expected_version"], form.cleaned_data["revision"]
    try:
        rebased = services.candidate_rebase(
            scope_id=candidate.scope_id,
            candidate_id=candidate.candidate_id,
            expected_version=expected,
            onto_revision=onto,
            reviewer=_reviewer(request),
        )
    except CONFLICTS as exc:
        return _conflict(request, pk, exc, action="rebase", expected_version=expected)
    except InvalidRequest as exc:
        messages.error(request, exc.message if not exc.details else str(exc.details["errors"][0]["msg"]))
    else:
        messages.success(
            request,
            f"Rebased candidate #{pk} onto revision {onto} as version {rebased.version}. "
            "Review the diff against the current revision before approving.",
        )
    return HttpResponseRedirect(_candidate_url(pk, qs))


@login_required
@require_http_methods(["GET", "POST"])
def candidate_revise(request: HttpRequest, pk: int) -> HttpResponse:
    if not _can_review(request):
        return _forbidden(request)
    candidate = candidate_selectors.candidate_load(pk)
    if candidate is None:
        return _not_found(request)
    summary = candidate_selectors.candidate_summary(candidate)
    form_class = REVISE_FORMS[candidate.family]
    qs = _filterset(request).querystring()
    if summary.latest is None or not summary.is_pending:
        posted = _int(request.POST.get("expected_version")) if request.method == "POST" else None
        return _conflict(
            request,
            pk,
            CandidateTerminal(details={"status": candidate.status}),
            action="revise",
            expected_version=posted,
        )
    if request.method == "GET":
        form = _unstash_form(request, pk, "revise", form_class) or form_class(
            initial=form_class.initial_from(candidate.version, summary.latest)
        )
    else:
        form = form_class(request.POST)
        if form.is_valid():
            expected = form.cleaned_data["expected_version"]
            try:
                revised = services.candidate_revise(
                    scope_id=candidate.scope_id,
                    candidate_id=candidate.candidate_id,
                    expected_version=expected,
                    submission=form.submission(summary.latest),
                    reviewer=_reviewer(request),
                )
            except CONFLICTS as exc:
                return _conflict(request, pk, exc, action="revise", expected_version=expected)
            except InvalidRequest as exc:
                add_service_errors(form, exc)
            else:
                messages.success(
                    request, f"Saved version {revised.version} of candidate #{pk}.", extra_tags=f"revise:{pk}"
                )
                return HttpResponseRedirect(_candidate_url(pk, qs))
        return _redirect_to_form(
            request, pk, "revise", form, _with_qs(reverse("review:revise", args=[pk]), qs)
        )
    return render(
        request,
        "review/revise.html",
        {"candidate": summary, "form": form, "filter_qs": qs, "can_review": True},
    )


@login_required
@require_GET
def candidate_history(request: HttpRequest, pk: int) -> HttpResponse:
    if (candidate := candidate_selectors.candidate_load(pk)) is None:
        return _not_found(request)
    items = candidate_selectors.history_items(
        candidate.family, candidate_selectors.candidate_versions(candidate)
    )
    return render(
        request,
        "review/history.html",
        {
            "candidate": candidate_selectors.candidate_summary(candidate),
            "items": list(reversed(items)),
            "filter_qs": _filterset(request).querystring(),
            "can_review": _can_review(request),
        },
    )
