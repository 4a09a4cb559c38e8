"""``{% undo_offer as offer %}``: the Undo offer of the reviewer's last decision, taken once (see
``review.views.undo``), for the toast in ``review/_undo_toast.html``."""

from __future__ import annotations

from typing import Any

from django import template
from django.template.context import Context

register = template.Library()


@register.simple_tag(takes_context=True)
def undo_offer(context: Context) -> dict[str, Any] | None:
    from review.views.undo import take_offer

    request = context.get("request")
    return take_offer(request) if request is not None else None
