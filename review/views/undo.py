"""Undo in the Inbox: a decision commits at once and offers its reviewer an Undo on the page they
land on next (``offer_undo`` keeps the offer in the session; the toast, ``_undo_toast.html``,
shows it once); the Undo button POSTs here and ``review.services.undo`` takes the decisions back.

One decision undone: the reviewer lands on the new pending candidate holding its content. A batch
(a bulk decision): back to the queue with what was undone and what could not be. Nothing could be
undone: the refusal page (409; 403 when the decisions were someone else's), never a 500."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.views.decorators.http import require_POST

from review.forms import UndoForm
from review.services import undo as undo_service
from review.views.common import (
    can_review,
    candidate_url,
    filterset_for,
    forbidden_page,
    reviewer_of,
    with_qs,
)

OFFER_KEY = "review:undo-offer"


def offer_undo(
    request: HttpRequest, candidate_pks: list[int], label: str, qs: str, *, url: str | None = None
) -> None:
    """Offer Undo of these just-taken decisions on the next page shown (replacing any earlier
    offer). ``label`` is built by the caller from fixed words and numbers only; ``url`` is where
    the Undo posts (default: ``review:undo``; a change request's: ``review:changes-undo``)."""
    if not candidate_pks or settings.POWERCONTEXT_REVIEW_UNDO_MINUTES <= 0:
        return
    request.session[OFFER_KEY] = {"pks": list(candidate_pks), "label": label, "qs": qs, "url": url}


def take_offer(request: HttpRequest) -> dict[str, Any] | None:
    """The pending Undo offer, once (the toast that shows it takes it)."""
    offer = request.session.pop(OFFER_KEY, None) if hasattr(request, "session") else None
    return offer if isinstance(offer, dict) and offer.get("pks") else None


def _refused_item(outcome: undo_service.UndoOutcome, qs: str) -> tuple[str, int, str]:
    return candidate_url(outcome.candidate_pk, qs), outcome.candidate_pk, outcome.message or ""


@login_required
@require_POST
def decisions_undo(request: HttpRequest) -> HttpResponse:
    if not can_review(request):
        return forbidden_page(request)
    form = UndoForm(request.POST)
    qs = filterset_for(request).querystring()
    queue = with_qs(reverse("review:queue"), qs)
    if not form.is_valid():
        messages.error(request, "The Undo form was malformed; nothing was undone.")
        return _see_other(queue)
    outcomes = undo_service.decisions_undo(
        candidate_pks=form.cleaned_data["candidate"], reviewer=reviewer_of(request)
    )
    done = [o for o in outcomes if o.reproposed is not None]
    refused = [o for o in outcomes if o.reproposed is None]
    if not done:
        forbidden = all(o.code == undo_service.UndoForbidden.code for o in refused)
        return render(
            request,
            "review/undo_refused.html",
            {"refused": refused, "filter_qs": qs, "can_review": True},
            status=403 if forbidden else 409,
        )
    if len(outcomes) == 1:
        (one,) = done
        messages.success(
            request,
            format_html(
                'Undone: your decision on candidate <a href="{}">#{}</a> is taken back (its history '
                "keeps it); its content is pending again here, as #{}.",
                candidate_url(one.candidate_pk),
                one.candidate_pk,
                one.reproposed,
            ),
        )
        assert one.reproposed is not None
        return _see_other(candidate_url(one.reproposed, qs))
    text = format_html(
        "Undone: {} of {} decisions; their content is pending again.", len(done), len(outcomes)
    )
    if refused:
        text = format_html(
            "{} Not undone: {}.",
            text,
            format_html_join("; ", '<a href="{}">#{}</a> ({})', (_refused_item(o, qs) for o in refused)),
        )
    (messages.warning if refused else messages.success)(request, text)
    return _see_other(queue)


def _see_other(url: str) -> HttpResponseRedirect:
    response = HttpResponseRedirect(url)
    response.status_code = 303
    return response
