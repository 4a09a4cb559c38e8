"""Feedback reads: the counters of a prepare's hits, and the policy prepare applies them with."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from django.conf import settings
from django.db import connection
from django.utils.dateparse import parse_datetime

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


def _seconds(value: datetime | str | None) -> float | None:
    """A timestamp column read by a raw cursor, as epoch seconds (SQLite's are naive UTC)."""
    if value is None:
        return None
    if isinstance(value, str):
        parsed = parse_datetime(value)
        if parsed is None:
            return None
        value = parsed
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


_COUNTERS = FeedbackCounter._meta.db_table
_COLUMNS = "target, uses, last_used_at, reporters, wrong_reporters, outdated_reporters, last_reported_at"


def usage_for(scope_id: str, targets: Iterable[str]) -> dict[str, Usage]:
    """target -> its counters, for the items of ``targets`` that have any (an item nobody
    reported or used is absent). One indexed read on the prepare path, issued as plain SQL: the
    ORM's query compilation cost ten times the read itself (267 vs 24 us for 48 targets)."""
    wanted = list(dict.fromkeys(targets))
    if not wanted:
        return {}
    placeholders = ", ".join(["%s"] * len(wanted))
    sql = f"SELECT {_COLUMNS} FROM {_COUNTERS} WHERE scope_id = %s AND target IN ({placeholders})"
    with connection.cursor() as cursor:
        cursor.execute(sql, [scope_id, *wanted])
        rows = cursor.fetchall()
    return {
        target: Usage(
            uses=int(uses),
            last_used_at=_seconds(last_used_at),
            reporters=int(reporters),
            wrong_reporters=int(wrong),
            outdated_reporters=int(outdated),
            last_reported_at=_seconds(last_reported_at),
        )
        for target, uses, last_used_at, reporters, wrong, outdated, last_reported_at in rows
    }
