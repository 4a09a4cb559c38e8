"""One candidate: its page, approve / reject / rebase / revise, history."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET, require_http_methods

from powercontext.core.exceptions import ArtifactConflict, CandidateTerminal, Conflict, InvalidRequest
from review import services
from review.forms import REVISE_FORMS, ApproveForm, ChangesForm, RebaseForm, RejectForm, add_service_errors
from review.models import Candidate
from review.selectors import actions as action_selectors
from review.selectors import candidate as candidate_selectors
from review.selectors import evidence as evidence_selectors
from review.selectors import governance as governance_selectors
from review.selectors import queue as queue_selectors
from review.selectors import reasons as reason_selectors
from review.selectors import similar as similar_selectors
from review.selectors import thread as thread_selectors
from review.services import changes as changes_service
from review.services import undo as undo_service
from review.views import sharing
from review.views.common import (
    CONFLICTS,
    acting_on,
    action_login_required,
    can_review,
    candidate_url,
    decided_url,
    filterset_for,
    not_found_page,
    redirect_to_form,
    reviewable,
    reviewer_form_view,
    reviewer_of,
    small_int,
    unstash_form,
    with_qs,
)
from review.views.governance import SelfApprovalForbidden, self_approval_refused
from review.views.undo import offer_undo


def _candidate_context(
    request: HttpRequest,
    candidate: Candidate,
    *,
    approve_form: ApproveForm | None = None,
    reject_form: RejectForm | None = None,
) -> dict[str, Any]:
    summary = candidate_selectors.candidate_summary(candidate)
    filterset = filterset_for(request)
    next_pk = prev_pk = position = None
    if filterset.is_valid():
        sort, split = filterset.sort, not filterset.one_family
        rows = sharing.navigable(request, filterset)  # Next/Previous skip items others are on
        next_pk = queue_selectors.neighbour(rows, candidate.pk, sort=sort, split=split)
        prev_pk = queue_selectors.neighbour(rows, candidate.pk, sort=sort, forward=False, split=split)
        position = queue_selectors.queue_position(filterset.qs, candidate.pk, sort=sort)
    evidence = None
    if summary.latest is not None:
        evidence = evidence_selectors.evidence_resolve(
            scope_id=candidate.scope_id,
            family=candidate.family,
            version=summary.latest,
            status=candidate.status,
        )
    initial = {"expected_version": candidate.version}
    approve_form = approve_form or unstash_form(request, candidate.pk, "approve", ApproveForm)
    reject_form = reject_form or unstash_form(request, candidate.pk, "reject", RejectForm)
    changes_form = unstash_form(request, candidate.pk, "changes", ChangesForm) or ChangesForm(initial=initial)
    return {
        "candidate": summary,
        "evidence": evidence,
        "filter_qs": filterset.querystring(),
        "next_pk": next_pk,
        "prev_pk": prev_pk,
        "position": position,
        "queue_status": filterset.status_value,
        "can_review": can_review(request),
        "approve_form": approve_form or ApproveForm(initial=initial),
        "reject_form": reject_form or RejectForm(initial=initial),
        "canned_reasons": (
            reason_selectors.canned_reasons() if summary.is_pending and can_review(request) else []
        ),
        "similar": similar_selectors.candidate_similar(candidate),
        "take_back": action_selectors.take_back(candidate),
        "undo_here": can_review(request) and undo_service.undo_offered(candidate, reviewer_of(request)),
        # The review thread (request changes, comments, the answers with their diffs).
        "thread": thread_selectors.thread_steps(candidate),
        "changes_form": changes_form,
        "changes_fields": [
            (name, label, changes_form[f"field_{name}"].value() or "")
            for name, label in candidate_selectors.labels(candidate.family)
        ],
        "changes_undo": can_review(request)
        and candidate.status == Candidate.Status.CHANGES_REQUESTED
        and changes_service.changes_undo_offered(candidate, reviewer_of(request)),
        **governance_selectors.page_context(candidate, request.user),
    }


@login_required
@require_GET
def candidate_detail(request: HttpRequest, pk: int) -> HttpResponse:
    if (candidate := candidate_selectors.candidate_load(pk)) is None:
        return not_found_page(request)
    context = _candidate_context(request, candidate) | sharing.viewing_context(request, candidate)
    return render(request, "review/candidate.html", context)


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
            "artifact_action": action in ("retire", "revert"),
            "artifact_state": (exc.details or {}).get("state"),
            "current_head": current_head,
            "filter_qs": filterset_for(request).querystring(),
            "can_review": can_review(request),
        },
        status=409,
    )


def _after_decision(request: HttpRequest, pk: int) -> HttpResponseRedirect:
    """Go on to the next candidate of the same queue that nobody else is on (see sharing.py)."""
    return sharing.after_decision(request, pk)


def _action_target(request: HttpRequest, pk: int, qs: str) -> Candidate | HttpResponse:
    """The candidate a POST action acts on, or the answer instead: a GET (a stale bookmark, a
    log-in's ``next``) goes to the candidate page, a viewer gets 403, an unknown pk 404."""
    if request.method == "GET":
        return HttpResponseRedirect(candidate_url(pk, qs))
    return reviewable(request, pk)


def _decide(
    request: HttpRequest,
    pk: int,
    *,
    action: str,
    form_class: type[ApproveForm] | type[RejectForm],
    decide: Callable[[Candidate, dict[str, Any]], SafeString],
) -> HttpResponse:
    """Approve and reject (the buttons, the keys, "Reject as duplicate"): load, validate the form,
    call the service, which commits at once, then go on to the next candidate, whose page offers
    Undo of this decision (``views/undo.py``); or back to the candidate page with the form's
    errors (nothing decided), or the 409 conflict page. A GET (a stale bookmark, a log-in's
    ``next``) goes to the candidate page."""
    qs = filterset_for(request).querystring()
    candidate = _action_target(request, pk, qs)
    if isinstance(candidate, HttpResponse):
        return candidate
    form = form_class(request.POST)
    if form.is_valid():
        expected = form.cleaned_data["expected_version"]
        try:
            message = decide(candidate, form.cleaned_data)
        except CONFLICTS as exc:
            return _conflict(request, pk, exc, action=action, expected_version=expected)
        except SelfApprovalForbidden as exc:
            return self_approval_refused(request, pk, exc, candidate_url(pk, qs))
        except InvalidRequest as exc:
            add_service_errors(form, exc)
        else:
            # Tells the browser the draft of this form was submitted (see inbox.js).
            messages.success(request, message, extra_tags=f"{action}:{pk}")
            offer_undo(request, [pk], f"{PAST[action].capitalize()} #{pk}.", qs)
            return _after_decision(request, pk)
    return redirect_to_form(request, pk, action, form, candidate_url(pk, qs))


PAST = {"approve": "approved", "reject": "rejected"}


def _with_result_link(message: str, url: str) -> SafeString:
    """A decision's message, linking to the decided candidate (its decision and result)."""
    return format_html('{} <a href="{}" data-result>View the result</a>', message, url)


@action_login_required
@require_http_methods(["GET", "POST"])
def candidate_approve(request: HttpRequest, pk: int) -> HttpResponse:
    def approve(candidate: Candidate, data: dict[str, Any]) -> SafeString:
        approved = services.candidate_approve(
            **acting_on(request, candidate),
            expected_version=data["expected_version"],
        )
        message = f"Approved candidate #{pk} (version {data['expected_version']})"
        if approved.result_head is not None:
            head = approved.result_head
            message += f" as {head.family}/{head.artifact_id} revision {approved.result_revision}"
        return _with_result_link(message + ".", decided_url(pk, Candidate.Status.APPROVED))

    return _decide(request, pk, action="approve", form_class=ApproveForm, decide=approve)


@action_login_required
@require_http_methods(["GET", "POST"])
def candidate_reject(request: HttpRequest, pk: int) -> HttpResponse:
    def reject(candidate: Candidate, data: dict[str, Any]) -> SafeString:
        services.candidate_reject(
            **acting_on(request, candidate),
            expected_version=data["expected_version"],
            reason=data["reason"],
        )
        message = f"Rejected candidate #{pk} (version {data['expected_version']})."
        return _with_result_link(message, decided_url(pk, Candidate.Status.REJECTED))

    return _decide(request, pk, action="reject", form_class=RejectForm, decide=reject)


@action_login_required
@require_http_methods(["GET", "POST"])
def candidate_rebase(request: HttpRequest, pk: int) -> HttpResponse:
    """Retarget a stale pending update to its Artifact's current head (a revise), then show the
    candidate again with the recomputed diff."""
    qs = filterset_for(request).querystring()
    candidate = _action_target(request, pk, qs)
    if isinstance(candidate, HttpResponse):
        return candidate
    form = RebaseForm(request.POST)
    if not form.is_valid():
        messages.error(request, "The rebase form was malformed; reload the page.")
        return HttpResponseRedirect(candidate_url(pk, qs))
    expected, onto = form.cleaned_data["expected_version"], form.cleaned_data["revision"]
    try:
        rebased = services.candidate_rebase(
            **acting_on(request, candidate),
            expected_version=expected,
            onto_revision=onto,
        )
    except services.MergeConflict as exc:
        fields = ", ".join(exc.details["fields"]) if exc.details else ""
        messages.error(
            request,
            f"Not rebased: the update and revision {onto} both changed {fields}, differently. "
            f"Choose per field what to keep below; saving targets revision {onto}, and you review "
            "its diff against that revision before approving.",
            extra_tags="merge-conflict",
        )
        return HttpResponseRedirect(with_qs(reverse("review:merge", args=[pk]), qs))
    except CONFLICTS as exc:
        return _conflict(request, pk, exc, action="rebase", expected_version=expected)
    except InvalidRequest as exc:
        messages.error(request, exc.message if not exc.details else str(exc.details["errors"][0]["msg"]))
    else:
        messages.success(
            request,
            f"Rebased candidate #{pk} onto revision {onto} as version {rebased.version} "
            "(merged field by field with what that revision changed). "
            "Review the diff against the current revision before approving.",
        )
    return HttpResponseRedirect(candidate_url(pk, qs))


@reviewer_form_view
def candidate_revise(request: HttpRequest, pk: int, candidate: Candidate) -> HttpResponse:
    summary = candidate_selectors.candidate_summary(candidate)
    form_class = REVISE_FORMS[candidate.family]
    qs = filterset_for(request).querystring()
    if summary.latest is None or not summary.is_pending:
        posted = small_int(request.POST.get("expected_version")) if request.method == "POST" else None
        return _conflict(
            request,
            pk,
            CandidateTerminal(details={"status": candidate.status}),
            action="revise",
            expected_version=posted,
        )
    if request.method == "GET":
        initial = form_class.initial_from(candidate.version, summary.latest)
        form = unstash_form(request, pk, "revise", form_class) or form_class(initial=initial)
    else:
        form = form_class(request.POST)
        if form.is_valid():
            expected = form.cleaned_data["expected_version"]
            try:
                revised = services.candidate_revise(
                    **acting_on(request, candidate),
                    expected_version=expected,
                    submission=form.submission(summary.latest),
                )
            except CONFLICTS as exc:
                return _conflict(request, pk, exc, action="revise", expected_version=expected)
            except InvalidRequest as exc:
                add_service_errors(form, exc)
            else:
                messages.success(
                    request, f"Saved version {revised.version} of candidate #{pk}.", extra_tags=f"revise:{pk}"
                )
                return HttpResponseRedirect(candidate_url(pk, qs))
        return redirect_to_form(request, pk, "revise", form, with_qs(reverse("review:revise", args=[pk]), qs))
    return render(
        request,
        "review/revise.html",
        {
            "candidate": summary,
            "form": form,
            "filter_qs": qs,
            "can_review": True,
        },
    )


@login_required
@require_GET
def candidate_history(request: HttpRequest, pk: int) -> HttpResponse:
    if (candidate := candidate_selectors.candidate_load(pk)) is None:
        return not_found_page(request)
    items = candidate_selectors.history_items(
        candidate.family, candidate_selectors.candidate_versions(candidate)
    )
    return render(
        request,
        "review/history.html",
        {
            "candidate": candidate_selectors.candidate_summary(candidate),
            "items": list(reversed(items)),
            **governance_selectors.page_context(candidate, request.user, history=True),
            "filter_qs": filterset_for(request).querystring(),
            "can_review": can_review(request),
        },
    )
