"""Feedback reads: the counters of a prepare's hits, and the policy prepare applies them with.

Prepare's read (``usage_for``) keeps what it read of a scope's counters in process, under the
scope's counter generation (``CounterGeneration``), which it reads first: one indexed row. While
the generation is the one it cached at, no counter of the scope has changed (every counter
write draws a new one in its transaction), so only the items it has not read yet are read; a new
generation starts the scope afresh. A report committed by any process is thus seen by the next
prepare of every process. Entries live in the vector cache (``search.vectors.vector_cache``: one
bound in bytes, least recently used scopes first; cleared with it).
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

from powercontext.feedback.models import COUNTER_FIELDS, CounterGeneration, FeedbackCounter
from powercontext.feedback.prior import PriorPolicy, Usage
from powercontext.search.vectors.vector_cache import ScopeLRU


def policy() -> PriorPolicy:
    """The prior and hold settings (``POWERCONTEXT_FEEDBACK_*``, docs/operators.md)."""
    return PriorPolicy(
        cap=float(settings.POWERCONTEXT_FEEDBACK_PRIOR_CAP),
        saturation_uses=int(settings.POWERCONTEXT_FEEDBACK_SATURATION_USES),
        half_life_days=float(settings.POWERCONTEXT_FEEDBACK_HALF_LIFE_DAYS),
        hold_reporters=int(settings.POWERCONTEXT_FEEDBACK_HOLD_REPORTERS),
    )


_COUNTERS = FeedbackCounter._meta.db_table


def _epoch(vendor: str, column: str) -> str:
    """SQL for a timestamp column as seconds since the epoch (a float), so the prepare path
    parses no datetime per row (SQLite stores them as UTC text)."""
    if vendor == "postgresql":
        return f"EXTRACT(EPOCH FROM {column})::float8"
    return f"(julianday({column}) - 2440587.5) * 86400.0"


@functools.lru_cache(maxsize=128)
def _usage_sql(vendor: str, count: int) -> str:
    """The counters read for ``count`` targets (one text per size: built once, and the
    database's statement cache sees the same text again)."""
    placeholders = ", ".join(["%s"] * count)
    # Rows with neither a use nor an open report change nothing (a dismissed item's row).
    return (
        f"SELECT target, uses, {_epoch(vendor, 'last_used_at')}, reporters FROM {_COUNTERS} "
        f"WHERE scope_id = %s AND target IN ({placeholders}) AND (uses > 0 OR reporters > 0)"
    )


_GENERATION_SQL = f"SELECT generation FROM {CounterGeneration._meta.db_table} WHERE scope_id = %s"
_UNREAD = Usage(uses=-1)  # compared by identity: a target not read at the cached generation
_ITEM_BYTES = 200  # a cached item beyond its key: its dict slot, and its counters when it has some


@dataclass
class _Known:
    """What this process read of one scope's counters at ``generation``: target -> counters
    (None: no use and no open report). ``usage`` only grows, under ``_lock``; ``size`` counts its
    bytes (roughly)."""

    generation: int
    usage: dict[str, Usage | None] = field(default_factory=dict)
    size: int = 0


_known: ScopeLRU[_Known] = ScopeLRU("feedback", lambda known: known.size)
_lock = threading.Lock()


def clear_cache() -> None:
    _known.clear()


def _keep(scope_id: str, known: _Known, read: dict[str, Usage | None]) -> None:
    with _lock:
        known.usage.update(read)
        known.size += sum(sys.getsizeof(target) + _ITEM_BYTES for target in read)
    _known.put(scope_id, known)  # put again: the cache's sum follows the size


def usage_for(scope_id: str, targets: Sequence[str]) -> dict[str, Usage]:
    """target -> the counters the prior and the hold read (uses, last use, reporters), for the
    items of ``targets`` with a use or an open report (others are absent). The scope's counter
    generation is read first (no row: the scope has no counters, nothing more is read); the items
    not cached at that generation are read by one indexed read, issued as plain SQL: the ORM's
    query compilation cost ten times the read itself (267 vs 24 us for 48 targets). A warm call
    is one single-row read whatever the targets, and dictionary look-ups without a lock: a cached
    map only grows, by one ``dict.update`` under ``_lock``, and a reader sees each item whole.
    ``counters_for`` reads every figure, for explain."""
    if not targets:
        return {}
    database = connections[DEFAULT_DB_ALIAS]
    with database.cursor() as cursor:
        cursor.execute(_GENERATION_SQL, [scope_id])
        row = cursor.fetchone()
        if row is None:
            return {}
        known = _known.get(scope_id)
        if known is None or known.generation != row[0]:
            known = _Known(row[0])
        cached = known.usage.get
        found: dict[str, Usage] = {}
        missing: dict[str, None] = {}
        for target in targets:
            counters = cached(target, _UNREAD)
            if counters is _UNREAD:
                missing[target] = None
            elif counters is not None:
                found[target] = counters
        if missing:
            cursor.execute(_usage_sql(database.vendor, len(missing)), [scope_id, *missing])
            read: dict[str, Usage | None] = dict(missing)
            read.update((row[0], Usage(*row[1:])) for row in cursor.fetchall())
            _keep(scope_id, known, read)
            found.update((target, counters) for target, counters in read.items() if counters is not None)
    return found


def counters_for(scope_id: str, targets: Iterable[str]) -> dict[str, Usage]:
    """target -> every counter of the items of ``targets`` that have a row (explain)."""
    return {
        target: Usage(
            uses,
            last_used.timestamp() if last_used is not None else None,
            reporters,
            wrong,
            outdated,
            last_reported.timestamp() if last_reported is not None else None,
        )
        for target, uses, last_used, reporters, wrong, outdated, last_reported in FeedbackCounter.objects.filter(
            scope_id=scope_id, target__in=list(dict.fromkeys(targets))
        ).values_list("target", *COUNTER_FIELDS[:-1])
    }
