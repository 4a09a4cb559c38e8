"""Template helpers of the governance parts of the Inbox (issue 22)."""

from __future__ import annotations

from typing import Any

from django import template

from review.selectors import governance
from review.selectors import reasons as reason_selectors

register = template.Library()


@register.filter
def get_version(mapping: dict[int, Any] | None, version: int) -> Any:
    """``authors|get_version:3``: the entry of version 3 (None when absent)."""
    return (mapping or {}).get(version)


@register.simple_tag(takes_context=True)
def rejection_parts(context: template.Context, reason: str | None) -> tuple[list[str], str]:
    """A rejection's reason as (the canned reasons it used, the rest of the text). The canned
    reasons are read once per rendered page (one query), not once per row."""
    cache = context.render_context
    if "review_canned" not in cache:
        cache["review_canned"] = reason_selectors.canned_reasons()
    return governance.split_reason(reason, cache["review_canned"])
