"""Bounded counts for the Review Inbox: ``COUNT`` over a ``LIMIT`` subquery, never a full-table
count, and the scope filter's suggestions by a loose index scan."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import QuerySet

from review.models import Candidate

COUNT_CAP = 1000


@dataclass(frozen=True)
class CappedCount:
    """A count that stops at ``COUNT_CAP``: ``more`` means "at least ``value``"."""

    value: int
    more: bool

    def __str__(self) -> str:
        return f"{self.value}+" if self.more else str(self.value)


def capped_count(rows: QuerySet[Any], cap: int | None = None) -> CappedCount:
    """``SELECT COUNT(*) FROM (... LIMIT cap + 1)``: bounded work however big the table is."""
    cap = COUNT_CAP if cap is None else cap
    found = rows.order_by()[: cap + 1].count()
    return CappedCount(value=min(found, cap), more=found > cap)


@dataclass(frozen=True)
class QueueCounts:
    pending_experience: CappedCount
    pending_skill: CappedCount


def queue_counts(rows: QuerySet[Candidate] | None = None) -> QueueCounts:
    """Candidates per family among ``rows`` (the queue's other filters; by default every pending
    candidate): two bounded counts."""
    if rows is None:
        rows = Candidate.objects.filter(status=Candidate.Status.PENDING)
    return QueueCounts(
        pending_experience=capped_count(rows.filter(family=Candidate.Family.EXPERIENCE)),
        pending_skill=capped_count(rows.filter(family=Candidate.Family.SKILL)),
    )


SCOPE_SUGGESTIONS = 100


def scope_suggestions(limit: int | None = None) -> list[str]:
    """Scope ids that have candidates, A-Z, at most ``limit`` (the scope filter's ``<datalist>``).

    One query, a loose index scan: each step asks the ``candidate_scope_queue`` index for the
    next scope id after the previous one, so it costs ``limit`` index lookups however many
    candidates each scope holds (a plain ``DISTINCT`` reads every row of the index).
    """
    limit = SCOPE_SUGGESTIONS if limit is None else limit
    table = connection.ops.quote_name(Candidate._meta.db_table)
    sql = (
        f"WITH RECURSIVE scopes(scope_id, n) AS ("  # noqa: S608 - the table name is ours, quoted
        f" SELECT (SELECT MIN(scope_id) FROM {table}), 1"
        f" UNION ALL SELECT (SELECT MIN(scope_id) FROM {table} WHERE scope_id > scopes.scope_id), n + 1"
        f" FROM scopes WHERE scopes.scope_id IS NOT NULL AND n < %s"
        f") SELECT scope_id FROM scopes WHERE scope_id IS NOT NULL ORDER BY n"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [limit])
        return [row[0] for row in cursor.fetchall()]
