"""Feedback reads: the counters of a prepare's hits, and the policy prepare applies them with."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.db import connection

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


_COUNTERS = FeedbackCounter._meta.db_table


def _epoch(column: str) -> str:
    """SQL for a timestamp column as seconds since the epoch (a float), so the prepare path
    parses no datetime per row (SQLite stores them as UTC text)."""
    if connection.vendor == "postgresql":
        return f"EXTRACT(EPOCH FROM {column})::float8"
    return f"(julianday({column}) - 2440587.5) * 86400.0"


def usage_for(scope_id: str, targets: Iterable[str]) -> dict[str, Usage]:
    """target -> its counters, for the items of ``targets`` with a use or an open report (others
    are absent). One indexed read on the prepare path, issued as plain SQL: the
    ORM's query compilation cost ten times the read itself (267 vs 24 us for 48 targets)."""
    wanted = list(dict.fromkeys(targets))
    if not wanted:
        return {}
    placeholders = ", ".join(["%s"] * len(wanted))
    columns = (
        f"target, uses, {_epoch('last_used_at')}, reporters, wrong_reporters, outdated_reporters, "
        f"{_epoch('last_reported_at')}"
    )
    # Rows with neither a use nor an open report change nothing (a dismissed item's row).
    sql = (
        f"SELECT {columns} FROM {_COUNTERS} WHERE scope_id = %s AND target IN ({placeholders}) "
        "AND (uses > 0 OR reporters > 0)"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [scope_id, *wanted])
        rows = cursor.fetchall()
    return {row[0]: Usage(*row[1:]) for row in rows}
