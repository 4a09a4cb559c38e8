"""Canned reject reasons, as the Inbox offers them (keys 1-9)."""

from __future__ import annotations

from review.models import CannedReason

KEYED = 9


def canned_reasons() -> list[str]:
    """The texts of the first nine canned reasons, in order (one query)."""
    return list(CannedReason.objects.order_by("position", "id").values_list("text", flat=True)[:KEYED])
