"""Prepare aggregates: add buffered counts to per-scope, per-hour rows; prune old rows.

Called by the in-process flusher (``powercontext.prepare.audit``), never by a prepare itself, so
a prepare's request never writes. Every bucket is one ``INSERT … ON CONFLICT DO UPDATE`` that
adds to the stored counters, so flushers in several processes (PostgreSQL) or threads never
lose each other's counts; buckets are written in sorted key order, so two flushers touching the
same buckets wait for each other instead of deadlocking.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from powercontext.prepare.models import PREPARE_AGGREGATE_COUNTERS, PrepareAggregate


@dataclass(frozen=True)
class AggregateDelta:
    """Counts to add to one bucket; ``counts`` follows ``PREPARE_AGGREGATE_COUNTERS``."""

    scope_id: str
    hour: datetime
    search_mode: str
    counts: tuple[int, ...]


def _upsert_sql() -> str:
    quote = connection.ops.quote_name
    fields = {f.name: str(f.column) for f in PrepareAggregate._meta.concrete_fields}
    table = quote(PrepareAggregate._meta.db_table)
    key = [quote(fields[name]) for name in ("scope_id", "hour", "search_mode")]
    counters = [quote(fields[name]) for name in PREPARE_AGGREGATE_COUNTERS]
    updated = quote(fields["updated_at"])
    columns = [*key, *counters, updated]
    additions = ", ".join(f"{c} = {table}.{c} + EXCLUDED.{c}" for c in counters)
    # Only model metadata (quoted table and column names) is interpolated; values are parameters.
    placeholders = ", ".join(["%s"] * len(columns))
    insert = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({placeholders})"  # noqa: S608
    return (
        f"{insert} ON CONFLICT ({', '.join(key)}) DO UPDATE SET {additions}, {updated} = EXCLUDED.{updated}"
    )


@transaction.atomic(durable=True)
def prepare_aggregates_add(*, deltas: Iterable[AggregateDelta], now: datetime) -> int:
    """Add each delta to its bucket (created at zero when missing). Returns the buckets written.

    One transaction; one statement per bucket. Raises ``ValueError`` when a delta's counts do
    not match the counter list (nothing is written).
    """
    ordered = sorted(deltas, key=lambda d: (d.scope_id, d.hour, d.search_mode))
    for delta in ordered:
        if len(delta.counts) != len(PREPARE_AGGREGATE_COUNTERS):
            raise ValueError("a delta must carry one count per aggregate counter")
    if not ordered:
        return 0
    sql = _upsert_sql()
    adapt = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        for delta in ordered:
            cursor.execute(
                sql, [delta.scope_id, adapt(delta.hour), delta.search_mode, *delta.counts, adapt(now)]
            )
    return len(ordered)


@transaction.atomic(durable=True)
def prepare_aggregates_prune(*, before: datetime) -> int:
    """Delete the buckets of hours that started before ``before``. Returns how many."""
    deleted, _ = PrepareAggregate.objects.filter(hour__lt=before).delete()
    return deleted


def prune_expired(*, days: int | None = None, now: datetime | None = None) -> int:
    """Prune the buckets of hours older than ``days`` (default: the retention setting)."""
    keep = days if days is not None else settings.POWERCONTEXT_PREPARE_AUDIT_RETENTION_DAYS
    if keep < 1:
        raise ValueError("the retention must be at least one day")
    return prepare_aggregates_prune(before=(now or timezone.now()) - timedelta(days=keep))
