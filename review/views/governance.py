"""The Inbox's answer to an approval that four-eyes review refuses (issue 22)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils.html import format_html

from review.selectors.governance import self_approval_why
from review.services.governance import SelfApprovalForbidden

__all__ = ["SelfApprovalForbidden", "self_approval_refused"]


def self_approval_refused(
    request: HttpRequest, pk: int, exc: SelfApprovalForbidden, url: str
) -> HttpResponse:
    """Nothing was written: say why on the candidate's page (POST/redirect/GET), whose Approve
    button then says why it is unavailable."""
    messages.error(
        request,
        format_html(
            'Candidate <a href="{}">#{}</a> was not approved: four-eyes review is on and {}, so '
            "another reviewer must approve it.",
            url,
            pk,
            self_approval_why(exc.details or {}),
        ),
        extra_tags=SelfApprovalForbidden.code,
    )
    response = HttpResponseRedirect(url)
    response.status_code = 303
    return response
