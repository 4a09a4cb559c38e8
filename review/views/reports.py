"""Reported items in the Review Inbox (issue 30, "A person decides"): the list of items agents
reported ``wrong`` or ``outdated`` that are still what prepare cites, one item's page, and the
decisions on it: Dismiss, Retire, Revise (a Memory entry's new text; an Experience's update,
proposed into the normal queue) and Undo.

Every page needs a logged-in user; viewers read, reviewers decide (a viewer's POST is 403). Each
decision is a CSRF-checked POST that calls one ``review.services.reports`` function and
redirects (POST/redirect/GET) to the item's page, which lists the decision with its Undo. Dismiss
carries ``seen_through``, the newest report the page showed, so reports that arrive later still
count. A form error (no reason, blank text) goes back to the page with the posted values and the
error tied to its field; a refused decision (the item changed, the reports were dismissed
meanwhile) shows the item as it is now with what happened (409), never a 500.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET, require_http_methods

from powercontext.core import families
from powercontext.core.exceptions import Conflict, InvalidRequest, NotFound
from powercontext.feedback.models import EXPERIENCE, MEMORY, ReportDecision
from review.forms import ReviseForm, TextField, add_service_errors, revise_form
from review.selectors import reported_item as item_selectors
from review.selectors import reports as report_selectors
from review.services import reports as report_services
from review.views.common import can_review, forbidden_page, reviewer_of, stash_form, with_stashed_errors

# --- forms ------------------------------------------------------------------------------------------


def _reason_field(label: str) -> TextField:
    return TextField(
        max_length=report_services.REASON_MAX_CHARS,
        label=label,
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={"required": "A reason is required."},
    )


class DismissForm(forms.Form):
    """Dismiss the reports up to the newest one the page showed."""

    seen_through = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    reason = _reason_field("Dismiss: why are the reports wrong? (required)")


class RetireForm(forms.Form):
    reason = _reason_field("Retire: why? (required)")


class ReviseMemoryForm(forms.Form):
    """The entry's new text (prefilled with the reported text) and why."""

    text = TextField(
        label="New text",
        widget=forms.Textarea(attrs={"rows": 6}),
        error_messages={"required": "The new text is required."},
    )
    reason = _reason_field("Revise: why? (required)")


# The Experience update: the family's fields with the Inbox revise form's rules, and a required
# reason; no candidate version (the update is a new candidate).
ProposeUpdateForm = cast(
    "type[ReviseForm]",
    type(
        "ProposeUpdateForm",
        (revise_form(families.EXPERIENCE),),
        {
            "expected_version": None,
            "reason": _reason_field("Propose: why? (required)"),
        },
    ),
)


class UndoForm(forms.Form):
    decision = forms.IntegerField(min_value=1, widget=forms.HiddenInput)


FORMS: dict[str, type[forms.Form]] = {
    "dismiss": DismissForm,
    "retire": RetireForm,
    "revise": ReviseMemoryForm,
    "propose": ProposeUpdateForm,
    "undo": UndoForm,
}


# --- plumbing -----------------------------------------------------------------------------------------


def item_url(pk: int) -> str:
    return reverse("review:reported-item", args=[pk])


def draft_key(pk: int, kind: str) -> str:
    """The browser's draft of one form of item ``pk`` (``_inbox.js``), forgotten when a success
    message names it."""
    return f"reported:{pk}:{kind}"


def _stash_key(pk: int) -> str:
    return f"review:reported-form:{pk}"


def _stash(request: HttpRequest, pk: int, kind: str, form: forms.Form) -> None:
    """Keep a failed form's posted values and errors for the item's page (shown once)."""
    stash_form(request, pk, kind, form, key=_stash_key(pk))


def make_form(kind: str, data: Any = None, initial: dict[str, Any] | None = None) -> forms.Form:
    """Form ``kind`` of an item's page; ids are prefixed by the kind (one page holds them all)."""
    return FORMS[kind](data, initial=initial, auto_id=f"{kind}-%s")


def _unstash(request: HttpRequest, pk: int) -> tuple[str, forms.Form] | None:
    stash = request.session.pop(_stash_key(pk), None)
    if not isinstance(stash, dict) or stash.get("kind") not in FORMS:
        return None
    kind = str(stash["kind"])
    return kind, with_stashed_errors(make_form(kind, stash.get("data") or {}), stash)


def _see_other(url: str) -> HttpResponseRedirect:
    response = HttpResponseRedirect(url)
    response.status_code = 303  # See Other: the browser GETs the item's page
    return response


def _missing(request: HttpRequest) -> HttpResponse:
    return render(request, "review/reported_not_found.html", {"can_review": can_review(request)}, status=404)


def _forms(item: item_selectors.ReportedItem, bound: dict[str, forms.Form]) -> dict[str, forms.Form]:
    """Every form of the item's page: the failed one as posted (with its errors), the others
    fresh (Revise prefilled with the reported text)."""
    fresh: dict[str, forms.Form] = {
        "dismiss": make_form("dismiss", initial={"seen_through": item.seen_through}),
        "retire": make_form("retire"),
        "revise": make_form("revise", initial={"text": item.text}),
        "propose": make_form("propose", initial=dict(item.proposal or {})),
        "undo": make_form("undo"),
    }
    shown = fresh | {kind: form for kind, form in bound.items() if kind in fresh}
    # e (outside text fields) goes to the new text, as it goes to the revise form of a candidate.
    first = "text" if item.is_memory else families.EXPERIENCE.field_names[0]
    shown["revise" if item.is_memory else "propose"].fields[first].widget.attrs["data-key"] = "e"
    return shown


def _page(
    request: HttpRequest,
    item: item_selectors.ReportedItem,
    *,
    bound: dict[str, forms.Form] | None = None,
    refused: str = "",
    typed: str = "",
    status: int = 200,
) -> HttpResponse:
    pk = item.key.pk
    return render(
        request,
        "review/reported_item.html",
        {
            "item": item,
            "forms": _forms(item, bound or {}),
            "refused": refused,
            "typed": typed,
            "can_review": can_review(request),
            "drafts": {kind: draft_key(pk, kind) for kind in FORMS},
        },
        status=status,
    )


# --- pages ----------------------------------------------------------------------------------------------


@login_required
@require_GET
def reported_list(request: HttpRequest) -> HttpResponse:
    after = report_selectors.parse_cursor(request.GET.get("after"))
    page = report_selectors.reported_page(after=after)
    return render(
        request,
        "review/reported.html",
        {
            "page": page,
            "count": report_selectors.reported_count(),
            "can_review": can_review(request),
        },
    )


@login_required
@require_GET
def reported_item(request: HttpRequest, pk: int) -> HttpResponse:
    item = item_selectors.reported_item(pk)
    if item is None:
        return _missing(request)
    failed = _unstash(request, pk)
    if failed is None:
        return _page(request, item)
    kind, form = failed
    if kind in _offered(item, can_review(request)):
        return _page(request, item, bound={kind: form})
    # The item changed since the form failed and the page no longer offers it: say why here.
    problems = " ".join(str(error) for errors in form.errors.values() for error in errors)
    return _page(request, item, refused=problems, typed=str(form.data.get("reason", "")).strip())


def _offered(item: item_selectors.ReportedItem, reviewer: bool) -> set[str]:
    """The forms the item's page shows (``reported_item.html`` decides the same way)."""
    if not reviewer:
        return set()
    if not item.current:
        return {"undo"}
    revise = "revise" if item.is_memory else "propose"
    return {"undo", "retire", revise} | ({"dismiss"} if item.open_reports else set())


# --- decisions --------------------------------------------------------------------------------------------

Decide = Callable[[HttpRequest, item_selectors.ItemKey, dict[str, Any]], SafeString | str]


def _decision_view(
    name: str, kind_of: Callable[[item_selectors.ItemKey], str]
) -> Callable[..., HttpResponse]:
    """The POST view of one decision: logged in (else to the log-in page, which leads back to
    the item's page), a GET goes to the item's page, a reviewer (403), a known item (404); then
    the item's form of ``kind_of(item)``, its one service call (``DECIDE``) and the redirect."""

    @require_http_methods(["GET", "POST"])
    def view(request: HttpRequest, pk: int) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(item_url(pk))
        if request.method == "GET":
            return HttpResponseRedirect(item_url(pk))
        if not can_review(request):
            return forbidden_page(request)
        key = item_selectors.reported_key(pk)
        if key is None:
            return _missing(request)
        kind = kind_of(key)
        form = make_form(kind, request.POST)
        if form.is_valid():
            try:
                message = DECIDE[kind](request, key, form.cleaned_data)
            except report_services.ReportNotFound:
                return _missing(request)
            except (Conflict, NotFound) as exc:
                return _refused(request, pk, kind, form, exc.message)
            except InvalidRequest as exc:
                add_service_errors(form, exc)
            else:
                messages.success(request, message, extra_tags=draft_key(pk, kind))
                return _see_other(item_url(pk))
        _stash(request, pk, kind, form)
        return _see_other(f"{item_url(pk)}#{kind}")

    view.__name__ = view.__qualname__ = f"reported_{name}"
    return view


def _refused(request: HttpRequest, pk: int, kind: str, form: forms.Form, why: str) -> HttpResponse:
    """Nothing was decided: the item as it is now (re-read after the failed transaction), with
    why, and the form as posted so nothing typed is lost (409)."""
    item = item_selectors.reported_item(pk)
    if item is None:
        return _missing(request)
    typed = str(form.data.get("reason", "")).strip()
    return _page(request, item, bound={kind: form}, refused=why, typed=typed, status=409)


def _dismiss(request: HttpRequest, key: item_selectors.ItemKey, data: dict[str, Any]) -> str:
    decision = report_services.report_dismiss(
        scope_id=key.scope_id,
        target=key.target,
        seen_through=data["seen_through"],
        reviewer=reviewer_of(request),
        reason=data["reason"],
    )
    return (
        f"Dismissed the reports up to #{decision.through_feedback}: they stay in the log and no longer "
        "count, so prepare recalls this item again. Reports that arrive from now on count anew."
    )


def _retire(request: HttpRequest, key: item_selectors.ItemKey, data: dict[str, Any]) -> str:
    decision = report_services.report_retire(
        scope_id=key.scope_id, target=key.target, reviewer=reviewer_of(request), reason=data["reason"]
    )
    if key.family == MEMORY:
        return (
            f"Retired the entry in Memory revision {decision.memory_revision}: prepare no longer "
            "returns it. Undo below restores it."
        )
    return "Retired the Experience: prepare no longer recalls it (its revisions are kept). Undo below restores it."


def _revise(request: HttpRequest, key: item_selectors.ItemKey, data: dict[str, Any]) -> str:
    decision = report_services.report_revise_memory(
        scope_id=key.scope_id,
        target=key.target,
        text=data["text"],
        reviewer=reviewer_of(request),
        reason=data["reason"],
    )
    return (
        f"Revised the entry in Memory revision {decision.memory_revision}: prepare returns the new "
        "text from now on, and its reports start clean. Undo below brings the reported text back."
    )


def _propose(request: HttpRequest, key: item_selectors.ItemKey, data: dict[str, Any]) -> SafeString:
    proposal = {name: data[name] for name in families.EXPERIENCE.field_names}
    decision = report_services.report_propose_update(
        scope_id=key.scope_id,
        target=key.target,
        proposal=proposal,
        reviewer=reviewer_of(request),
        reason=data["reason"],
    )
    candidate = item_selectors.proposed_candidate(key.scope_id, decision.candidate_id)
    return format_html(
        'Proposed an update as <a href="{}" data-proposed>candidate #{}</a>, pending in the queue: '
        "agents get it once a reviewer approves it (until then they get this revision).",
        reverse("review:candidate", args=[candidate]) if candidate else item_url(key.pk),
        candidate or "",
    )


UNDO_WORDS: dict[tuple[str, str], str] = {
    (MEMORY, ReportDecision.Action.DISMISSED): "its reports count again",
    (MEMORY, ReportDecision.Action.RETIRED): "the entry is back in Memory",
    (MEMORY, ReportDecision.Action.REVISED): "the reported text is the entry's active version again",
    (EXPERIENCE, ReportDecision.Action.DISMISSED): "its reports count again",
    (EXPERIENCE, ReportDecision.Action.RETIRED): "the Experience is recalled again, as a new revision",
    (EXPERIENCE, ReportDecision.Action.REVISED): "the proposed update is rejected",
}


def _undo(request: HttpRequest, key: item_selectors.ItemKey, data: dict[str, Any]) -> str:
    action = item_selectors.decision_action(key, data["decision"])
    if action is None:  # not a decision on this item
        raise report_services.ReportNotFound()
    report_services.report_decision_undo(decision_id=data["decision"], reviewer=reviewer_of(request))
    words = UNDO_WORDS.get((key.family, action), "it is taken back")
    return f"Undone: the {action} decision #{data['decision']} is taken back; {words}."


DECIDE: dict[str, Decide] = {
    "dismiss": _dismiss,
    "retire": _retire,
    "revise": _revise,
    "propose": _propose,
    "undo": _undo,
}


def _always(kind: str) -> Callable[[item_selectors.ItemKey], str]:
    return lambda key: kind


def _revise_kind(key: item_selectors.ItemKey) -> str:
    """Revise writes a Memory entry's new text, or proposes an Experience's update."""
    return "revise" if key.family == MEMORY else "propose"


reported_dismiss = _decision_view("dismiss", _always("dismiss"))
reported_retire = _decision_view("retire", _always("retire"))
reported_revise = _decision_view("revise", _revise_kind)
reported_undo = _decision_view("undo", _always("undo"))
