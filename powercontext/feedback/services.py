"""Feedback writes: record what agents report, and keep the counters derived from the log.

``feedback_record`` is one transaction: it resolves every citation (all or nothing: an unknown
one is a 422 naming the item), applies the reporter's rate limit, inserts the rows the reporter
has not sent yet today (idempotent per reporter, item, outcome and UTC day), and refreshes the
counters of the items it touched. Prepare never writes: it only reads the counters.

Counters are a projection: ``counters_refresh_within`` recomputes an item's counters from its
log rows (and its standing dismissal), so refreshing is idempotent and a rebuild is the same
function over every item of the log. Concurrent writers about one item serialize on its counter
row (``select_for_update``, in sorted order; SQLite's immediate transactions serialize anyway),
so the recount sees every committed row.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Max, Q
from django.utils import timezone

from powercontext.core.exceptions import InvalidRequest, RateLimited
from powercontext.core.models import ApiToken
from powercontext.core.redaction_detectors import redact
from powercontext.core.transactions import require_transaction
from powercontext.feedback.models import (
    COUNTER_FIELDS,
    EXPERIENCE,
    MEMORY,
    REPORTS,
    CounterGeneration,
    Feedback,
    FeedbackCounter,
    Outcome,
    ReportDecision,
)
from powercontext.feedback.targets import Target, resolve

RECORDED = "recorded"
ALREADY_RECORDED = "already_recorded"
LOCAL_REPORTER = "local"
RATE_WINDOW = timedelta(minutes=1)


@dataclass(frozen=True)
class FeedbackItem:
    citation: Mapping[str, Any]
    outcome: str
    note: str = ""


@dataclass(frozen=True)
class ItemResult:
    outcome: str
    recorded: bool
    status: str  # RECORDED | ALREADY_RECORDED


def reporter_of(token: ApiToken | None) -> str:
    """The reporter key: one per token; every tokenless call of the embedded default is one
    reporter (``local``), so it can never count as several."""
    return f"token:{token.pk}" if token is not None else LOCAL_REPORTER


def _unknown(indexes: Sequence[int]) -> InvalidRequest:
    return InvalidRequest(
        details={
            "errors": [
                {
                    "loc": ["body", "items", index, "citation"],
                    "msg": "The citation names no Memory entry version or Experience revision of this scope.",
                    "type": "citation_unknown",
                }
                for index in indexes
            ]
        }
    )


def _rate_limit(reporter: str, now: datetime, adding: int) -> None:
    limit = int(settings.POWERCONTEXT_FEEDBACK_RATE_PER_MINUTE)
    if limit <= 0 or adding == 0:
        return
    recent = Feedback.objects.filter(reporter=reporter, created_at__gt=now - RATE_WINDOW).count()
    if recent + adding > limit:
        raise RateLimited(retry_after=int(RATE_WINDOW.total_seconds()))


@transaction.atomic(durable=True)
def feedback_record(
    *, scope_id: str, items: Sequence[FeedbackItem], token: ApiToken | None, now: datetime | None = None
) -> list[ItemResult]:
    """Record one call's feedback; return, per item, whether this call recorded it.

    An item the reporter already sent today (same item, same outcome), or earlier in this call,
    is ``already_recorded``: it changes nothing. Raises ``InvalidRequest`` (422, every unknown
    citation named by its index; nothing is written) and ``RateLimited`` (429: the reporter sent
    more than ``POWERCONTEXT_FEEDBACK_RATE_PER_MINUTE`` new rows in the last minute). ``now``
    is the clock (the replay evaluation passes simulated days; the API never does).
    """
    targets = resolve(scope_id, [item.citation for item in items])
    unknown = [index for index, target in enumerate(targets) if target is None]
    if unknown:
        raise _unknown(unknown)
    resolved = [target for target in targets if target is not None]
    reporter = reporter_of(token)
    now = now or timezone.now()
    day = now.date()
    by_key = {target.target: target for target in resolved}
    _lock_counters(scope_id, by_key.values())
    sent_today = _sent_today(scope_id, by_key, reporter, day)
    rows: list[Feedback] = []
    results: list[ItemResult] = []
    for item, target in zip(items, resolved, strict=True):
        key = (target.target, item.outcome)
        if key in sent_today:
            results.append(ItemResult(item.outcome, False, ALREADY_RECORDED))
            continue
        sent_today.add(key)
        rows.append(
            Feedback(
                scope_id=scope_id,
                target=target.target,
                family=target.family,
                entry_version_id=target.entry_version_pk,
                artifact_revision_id=target.artifact_revision_pk,
                cited_revision=target.cited_revision,
                outcome=item.outcome,
                note=redact(item.note).text if item.note else "",
                reporter=reporter,
                token=token,
                day=day,
                created_at=now,
            )
        )
        results.append(ItemResult(item.outcome, True, RECORDED))
    _rate_limit(reporter, now, len(rows))
    Feedback.objects.bulk_create(rows)
    counters_refresh_within(scope_id, sorted({row.target for row in rows}))
    return results


def _lock_counters(scope_id: str, targets: Iterable[Target]) -> None:
    """Make sure every target has its counter row, and lock those rows in sorted order
    (PostgreSQL; SQLite's immediate transaction already holds the database's write lock). Plain
    statements: the ORM's compilation cost more than the statements on every feedback call."""
    wanted = sorted(targets, key=lambda target: target.target)
    if not wanted:
        return
    rows = ", ".join(["(%s, %s, %s, %s, %s, 0, NULL, 0, 0, 0, NULL, 0)"] * len(wanted))
    params: list[Any] = []
    for target in wanted:
        params += [
            scope_id,
            target.target,
            target.family,
            target.entry_version_pk,
            target.artifact_revision_pk,
        ]
    with connection.cursor() as cursor:
        cursor.execute(f"{_ENSURE_COUNTERS} {rows} ON CONFLICT (scope_id, target) DO NOTHING", params)
        if connection.features.has_select_for_update:
            keys = ", ".join(["%s"] * len(wanted))
            cursor.execute(
                f"SELECT id FROM {_C} WHERE scope_id = %s AND target IN ({keys}) ORDER BY target FOR UPDATE",  # noqa: S608
                [scope_id, *(target.target for target in wanted)],
            )
            cursor.fetchall()


def _sent_today(scope_id: str, targets: Iterable[str], reporter: str, day: date) -> set[tuple[str, str]]:
    """(target, outcome) of what ``reporter`` already sent today about ``targets``."""
    keys = list(targets)
    if not keys:
        return set()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT target, outcome FROM {_F} WHERE scope_id = %s AND reporter = %s AND day = %s "  # noqa: S608
            f"AND target IN ({', '.join(['%s'] * len(keys))})",
            [scope_id, reporter, connection.ops.adapt_datefield_value(day), *keys],
        )
        return {(target, outcome) for target, outcome in cursor.fetchall()}


def standing_dismissals(scope_id: str, targets: Iterable[str] | None = None) -> dict[str, int]:
    """target -> the newest feedback id its standing (not undone) dismissals covered, for the
    items of ``targets`` (None: every item of the scope)."""
    decisions = ReportDecision.objects.filter(
        scope_id=scope_id, action=ReportDecision.Action.DISMISSED, undone_by__isnull=True
    )
    if targets is not None:
        decisions = decisions.filter(target__in=list(targets))
    return dict(
        decisions.values("target").annotate(through=Max("through_feedback")).values_list("target", "through")
    )


def expected_counters(scope_id: str, targets: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    """What the log says about each item of ``targets`` (None: every item of the scope's log):
    target -> the counter fields (and the item's family and row). Two queries."""
    rows = Feedback.objects.filter(scope_id=scope_id)
    if targets is not None:
        rows = rows.filter(target__in=list(targets))
    dismissed = standing_dismissals(scope_id, targets)
    open_reports = Q(outcome__in=REPORTS)
    if dismissed:
        after = ~Q(target__in=list(dismissed))
        for target, through in dismissed.items():
            after |= Q(target=target, id__gt=through)
        open_reports &= after

    def reporters(extra: Q) -> Count:
        return Count("reporter", filter=open_reports & extra, distinct=True)

    figures = (
        rows.values("target")
        .annotate(
            family=Max("family"),
            entry_version=Max("entry_version"),
            artifact_revision=Max("artifact_revision"),
            uses=Count("id", filter=Q(outcome=Outcome.USED)),
            last_used_at=Max("created_at", filter=Q(outcome=Outcome.USED)),
            reporters=reporters(Q()),
            wrong_reporters=reporters(Q(outcome=Outcome.WRONG)),
            outdated_reporters=reporters(Q(outcome=Outcome.OUTDATED)),
            last_reported_at=Max("created_at", filter=open_reports),
        )
        .order_by()
    )
    return {row["target"]: {**row, "reports_after": dismissed.get(row["target"], 0)} for row in figures}


_C = FeedbackCounter._meta.db_table
_F = Feedback._meta.db_table
_D = ReportDecision._meta.db_table
_ENSURE_COUNTERS = (
    f"INSERT INTO {_C} (scope_id, target, family, entry_version_id, artifact_revision_id, uses, "  # noqa: S608
    "last_used_at, reporters, wrong_reporters, outdated_reporters, last_reported_at, reports_after) VALUES"
)
_SAME_ITEM = f"f.scope_id = {_C}.scope_id AND f.target = {_C}.target"
# The newest feedback id the item's standing (not undone) dismissals covered; 0: none.
_DISMISSED = (
    f"COALESCE((SELECT MAX(d.through_feedback) FROM {_D} d WHERE d.scope_id = {_C}.scope_id "
    f"AND d.target = {_C}.target AND d.action = '{ReportDecision.Action.DISMISSED.value}' "
    f"AND NOT EXISTS (SELECT 1 FROM {_D} u WHERE u.undoes_id = d.id)), 0)"
)
_USED = f"f.outcome = '{Outcome.USED.value}'"
_OPEN = f"f.id > {_DISMISSED}"
_WRONG = f"f.outcome = '{Outcome.WRONG.value}' AND {_OPEN}"
_OUTDATED = f"f.outcome = '{Outcome.OUTDATED.value}' AND {_OPEN}"
_REPORTED = f"f.outcome IN ('{Outcome.WRONG.value}', '{Outcome.OUTDATED.value}') AND {_OPEN}"


def _of_item(aggregate: str, condition: str) -> str:
    return f"(SELECT {aggregate} FROM {_F} f WHERE {_SAME_ITEM} AND {condition})"


# One statement recomputes every counter of the listed items from the log (the same figures as
# ``expected_counters``, which ``counters_verify`` compares them with): the ORM's bulk update and
# aggregate cost five times the statements themselves on the feedback write.
_REFRESH = (
    f"UPDATE {_C} SET "
    f"uses = {_of_item('COUNT(*)', _USED)}, "
    f"last_used_at = {_of_item('MAX(f.created_at)', _USED)}, "
    f"reports_after = {_DISMISSED}, "
    f"reporters = {_of_item('COUNT(DISTINCT f.reporter)', _REPORTED)}, "
    f"wrong_reporters = {_of_item('COUNT(DISTINCT f.reporter)', _WRONG)}, "
    f"outdated_reporters = {_of_item('COUNT(DISTINCT f.reporter)', _OUTDATED)}, "
    f"last_reported_at = {_of_item('MAX(f.created_at)', _REPORTED)} "
    f"WHERE scope_id = %s AND target IN "
)


# A new generation for the scope's counters (``CounterGeneration``): the row is created by the
# scope's first counter write, then rewritten by each.
_NEW_GENERATION = (
    f"INSERT INTO {CounterGeneration._meta.db_table} (scope_id, generation) VALUES (%s, %s) "
    "ON CONFLICT (scope_id) DO UPDATE SET generation = excluded.generation"
)


def _counters_changed(scope_id: str) -> None:
    """Draw the scope's counters a new generation, in the caller's transaction: processes that
    cached the old one read the counters again once it commits. Last in every writer's
    transaction, so its row lock (PostgreSQL) is held only until the commit, and always after the
    counter rows' locks (no two writers wait on each other's)."""
    with connection.cursor() as cursor:
        cursor.execute(_NEW_GENERATION, [scope_id, secrets.randbits(63)])


def counters_refresh_within(scope_id: str, targets: Sequence[str]) -> int:
    """Recompute the counters of ``targets`` from the log, inside the caller's transaction
    (which holds their counter rows locked: ``_lock_counters``), and draw the scope's counters
    a new generation. Two statements; returns the counter rows it rewrote."""
    require_transaction("counters_refresh_within")
    if not targets:
        return 0
    placeholders = ", ".join(["%s"] * len(targets))
    with connection.cursor() as cursor:
        cursor.execute(f"{_REFRESH}({placeholders})", [scope_id, *targets])
        rewritten = int(cursor.rowcount)
    _counters_changed(scope_id)
    return rewritten


@transaction.atomic(durable=True)
def counters_refresh(*, scope_id: str, targets: Sequence[str]) -> int:
    """``counters_refresh_within`` in a transaction of its own (locks the counter rows)."""
    locked = list(
        FeedbackCounter.objects.select_for_update()
        .filter(scope_id=scope_id, target__in=list(targets))
        .order_by("target")
        .values_list("target", flat=True)
    )
    return counters_refresh_within(scope_id, locked)


def scopes_with_feedback() -> list[str]:
    return sorted(
        set(Feedback.objects.values_list("scope_id", flat=True).distinct())
        | set(FeedbackCounter.objects.values_list("scope_id", flat=True).distinct())
    )


@dataclass(frozen=True)
class CounterDrift:
    scope_id: str
    missing: int  # items of the log without a counter row
    stale: int  # counter rows whose figures differ from the log's
    orphaned: int  # counter rows of items the log does not hold

    @property
    def ok(self) -> bool:
        return not (self.missing or self.stale or self.orphaned)


def counters_verify(*, scope_id: str) -> CounterDrift:
    """Compare the scope's counter rows with what its log says; writes nothing."""
    expected = expected_counters(scope_id)
    actual = {
        counter["target"]: counter
        for counter in FeedbackCounter.objects.filter(scope_id=scope_id).values("target", *COUNTER_FIELDS)
    }
    stale = sum(
        1
        for target, figures in expected.items()
        if target in actual and any(actual[target][name] != figures[name] for name in COUNTER_FIELDS)
    )
    return CounterDrift(
        scope_id=scope_id,
        missing=sum(1 for target in expected if target not in actual),
        stale=stale,
        orphaned=sum(1 for target in actual if target not in expected),
    )


@transaction.atomic(durable=True)
def counters_rebuild(*, scope_id: str) -> int:
    """Rebuild the scope's counters from its log: every item of the log gets its row with the
    log's figures, rows of items the log does not hold are deleted. Returns the rows written.

    Safe beside feedback writers. On PostgreSQL it first takes the counter table in SHARE ROW
    EXCLUSIVE mode: that waits for every writer that has begun writing counters (a writer locks
    its counter rows before it adds to the log) and holds new ones at their first counter
    statement until this commits, so the log it reads cannot grow under it. Without it, a
    writer that committed between this read and the delete below lost its row. Writers of every
    scope wait that long (a rebuild is an operator's repair). SQLite: the IMMEDIATE transaction
    already holds the database's write lock."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"LOCK TABLE {_C} IN SHARE ROW EXCLUSIVE MODE")
    expected = expected_counters(scope_id)
    FeedbackCounter.objects.filter(scope_id=scope_id).exclude(target__in=list(expected)).delete()
    targets = [
        Target(
            family=figures["family"],
            target=target,
            cited_revision=0,
            entry_version_pk=figures["entry_version"] if figures["family"] == MEMORY else None,
            artifact_revision_pk=figures["artifact_revision"] if figures["family"] == EXPERIENCE else None,
        )
        for target, figures in expected.items()
    ]
    _lock_counters(scope_id, targets)
    if expected:
        counters_refresh_within(scope_id, sorted(expected))
    else:  # the log holds nothing (any rows were deleted above)
        _counters_changed(scope_id)
    return len(expected)


@dataclass(frozen=True)
class CountersReport:
    """Drift of the counters of every scope checked (``drifted``: scopes whose counters differ
    from their log), and whether they were rebuilt (``repaired``)."""

    scopes: int
    drifted: tuple[CounterDrift, ...]
    repaired: bool = False

    @property
    def ok(self) -> bool:
        return not self.drifted

    def as_dict(self) -> dict[str, Any]:
        """Counts only (never a scope id): what a log line or a task result may carry."""
        return {
            "ok": self.ok,
            "scopes": self.scopes,
            "drifted_scopes": len(self.drifted),
            "missing": sum(d.missing for d in self.drifted),
            "stale": sum(d.stale for d in self.drifted),
            "orphaned": sum(d.orphaned for d in self.drifted),
            "repaired": self.repaired,
        }


def counters_verify_all(*, scope_id: str | None = None, repair: bool = False) -> CountersReport:
    """Verify the counters of one scope or of every scope with feedback; with ``repair``,
    rebuild the drifted ones."""
    scopes = [scope_id] if scope_id is not None else scopes_with_feedback()
    drifted = tuple(drift for scope in scopes if not (drift := counters_verify(scope_id=scope)).ok)
    if repair:
        for drift in drifted:
            counters_rebuild(scope_id=drift.scope_id)
    return CountersReport(scopes=len(scopes), drifted=drifted, repaired=repair and bool(drifted))


def counters_rebuild_all(
    *, scope_id: str | None = None, progress: Callable[[int], None] | None = None
) -> int:
    """Rebuild the counters of one scope, or of every scope with feedback (one transaction per
    scope). Returns the counter rows written."""
    written = 0
    for scope in [scope_id] if scope_id is not None else scopes_with_feedback():
        count = counters_rebuild(scope_id=scope)
        written += count
        if progress is not None:
            progress(count)
    return written
