"""Feedback reads: the counters of a prepare's hits, and the policy prepare applies them with."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings

from powercontext.feedback.models import FeedbackCounter
from powercontext.feedback.prior import PriorPolicy, Usage


def policy() -> PriorPolicy:
    """The prior and hold settings (``POWERCONTEXT_FEEDBACK_*``, docs/operators.md)."""
    return PriorPolicy(
        cap=float(settings.POWERCONTEXT_FEEDBACK_PRIOR_CAP),
        saturation_uses=int(settings.POWERCONTEXT_FEEDBACK_SATURATION_USES),
        half_life_days=float(settings.POWERCONTEXT_FEEDBACK_HALF_LIFE_DAYS),
        hold_reporters=int(settings.POWERCONTEXT_FEEDBACK_HOLD_REPORTERS),
    )


def usage_for(scope_id: str, targets: Iterable[str]) -> dict[str, Usage]:
    """target -> its counters, for the items of ``targets`` that have any (one indexed read;
    an item nobody reported or used is absent)."""
    wanted = list(dict.fromkeys(targets))
    if not wanted:
        return {}
    return {
        target: Usage(
            uses=uses,
            last_used_at=last_used_at.timestamp() if last_used_at is not None else None,
            reporters=reporters,
            wrong_reporters=wrong,
            outdated_reporters=outdated,
            last_reported_at=last_reported_at.timestamp() if last_reported_at is not None else None,
        )
        for target, uses, last_used_at, reporters, wrong, outdated, last_reported_at in (
            FeedbackCounter.objects.filter(scope_id=scope_id, target__in=wanted).values_list(
                "target",
                "uses",
                "last_used_at",
                "reporters",
                "wrong_reporters",
                "outdated_reporters",
                "last_reported_at",
            )
        )
    }
