"""Pipeline reads: sessions (content sources grouped by ``metadata.session_id``), their
watermarks and pollution, eligibility, and the counters."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from typing import Any

from django.db.models import Case, CharField, Count, F, IntegerField, Max, Q, QuerySet, Value, When
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Coalesce, Concat

from powercontext.core.models import ScopeState, Source
from powercontext.pipeline.config import PipelineConfig
from powercontext.pipeline.generation import SessionSource
from powercontext.pipeline.models import PipelineCounter, PipelineJob, PipelineOutput, PipelineSetAside

CONTENT = "content"
LONE_SESSION_PREFIX = "source:"


@dataclass(frozen=True)
class SessionInfo:
    session_id: str
    watermark: int  # the highest source position of the session
    newest_at: datetime
    polluted: bool
    source_count: int


def session_key() -> Coalesce:
    """A source's session: ``metadata.session_id``, or ``source:<source_id>`` for a lone source."""
    return Coalesce(
        KeyTextTransform("session_id", "metadata"),
        Concat(Value(LONE_SESSION_PREFIX), F("source_id"), output_field=CharField()),
        output_field=CharField(),
    )


def polluted_q(origins: Iterable[str]) -> Q:
    """A source that says it carried external context (or comes from a listed origin)."""
    q = Q(metadata__external_context=True)
    origins = list(origins)
    if origins:
        q |= Q(metadata__origin__in=origins)
    return q


def _sessions(
    scope_id: str,
    origins: Iterable[str],
    session_id: str | None = None,
    *,
    newer_than: datetime | None = None,
) -> list[SessionInfo]:
    rows = Source.objects.filter(scope_id=scope_id, source_type=CONTENT).annotate(session=session_key())
    if session_id is not None:
        rows = rows.filter(session=session_id)
    grouped = (
        rows.values("session")
        .annotate(
            watermark=Max("position"),
            newest_at=Max("created_at"),
            polluted=Max(
                Case(When(polluted_q(origins), then=Value(1)), default=Value(0), output_field=IntegerField())
            ),
            source_count=Count("pk"),
        )
        .order_by("session")
    )
    if newer_than is not None:
        # HAVING: a session whose newest source is older than this is past max_age.
        grouped = grouped.filter(newest_at__gte=newer_than)
    return [
        SessionInfo(
            session_id=row["session"],
            watermark=row["watermark"],
            newest_at=row["newest_at"],
            polluted=bool(row["polluted"]),
            source_count=row["source_count"],
        )
        for row in grouped
    ]


def pipeline_sessions(*, scope_id: str, config: PipelineConfig) -> list[SessionInfo]:
    return _sessions(scope_id, config.polluted_origins)


def pipeline_session(*, scope_id: str, session_id: str, config: PipelineConfig) -> SessionInfo | None:
    found = _sessions(scope_id, config.polluted_origins, session_id)
    return found[0] if found else None


def polluted_session_ids(*, scope_id: str, config: PipelineConfig) -> set[str]:
    return set(
        Source.objects.filter(scope_id=scope_id, source_type=CONTENT)
        .filter(polluted_q(config.polluted_origins))
        .annotate(session=session_key())
        .values_list("session", flat=True)
    )


def _processable(scope_id: str, session_id: str, up_to: int) -> QuerySet[Source]:
    set_aside = PipelineSetAside.objects.filter(scope_id=scope_id, session_id=session_id).values("source_id")
    return (
        Source.objects.filter(scope_id=scope_id, source_type=CONTENT, position__lte=up_to)
        .annotate(session=session_key())
        .filter(session=session_id)
        .exclude(source_id__in=set_aside)
        .order_by("position")
    )


def session_positions(*, scope_id: str, session_id: str, up_to: int) -> list[tuple[int, str]]:
    """(position, source_id) of the session's sources up to ``up_to`` that were not set aside,
    oldest first (what Phase 1 bisects when it isolates a failing source)."""
    return list(_processable(scope_id, session_id, up_to).values_list("position", "source_id"))


def session_sources(*, scope_id: str, session_id: str, up_to: int) -> list[SessionSource]:
    """The session's sources up to position ``up_to`` (the claimed watermark, or a bisection
    probe's end), oldest first, without the ones set aside. Content is returned as captured:
    the caller redacts before anything else sees it."""
    rows = _processable(scope_id, session_id, up_to).values_list(
        "source_id", "position", "content", "metadata"
    )
    return [
        SessionSource(
            source_id=sid, position=pos, content=content, metadata=meta if isinstance(meta, dict) else {}
        )
        for sid, pos, content, meta in rows
    ]


def pipeline_scopes(*, config: PipelineConfig, scope_id: str | None = None) -> list[str]:
    scopes = ScopeState.objects.order_by("scope_id").values_list("scope_id", flat=True)
    if scope_id is not None:
        scopes = scopes.filter(scope_id=scope_id)
    return [s for s in scopes if s not in config.excluded_scopes]


def eligible_sessions(
    *, scope_id: str, now: datetime, config: PipelineConfig, ignore_idle: bool = False
) -> list[SessionInfo]:
    """Sessions Phase 1 should claim now, oldest watermark first, at most ``run_cap``.

    Idle for ``idle`` (unless ``ignore_idle``), newer than ``max_age``, not polluted, not
    covered by a successful output or a successful no-output, not leased, not backing off
    and not exhausted on this watermark (a newer watermark always qualifies)."""
    return list(
        islice(_eligible(scope_id=scope_id, now=now, config=config, ignore_idle=ignore_idle), config.run_cap)
    )


def waiting_sessions(*, scope_id: str, now: datetime, config: PipelineConfig) -> tuple[int, datetime | None]:
    """(how many sessions are eligible now, the oldest ``newest_at`` among them): the same rule
    as ``eligible_sessions`` without its ``run_cap``, so an operator sees the true backlog. One
    grouped query per scope, which only returns sessions younger than ``max_age``."""
    count, oldest = 0, None
    for session in _eligible(scope_id=scope_id, now=now, config=config, ignore_idle=False):
        count += 1
        oldest = session.newest_at if oldest is None else min(oldest, session.newest_at)
    return count, oldest


def _eligible(
    *, scope_id: str, now: datetime, config: PipelineConfig, ignore_idle: bool
) -> Iterator[SessionInfo]:
    if scope_id in config.excluded_scopes:
        return
    jobs = {
        job["session_id"]: job
        for job in PipelineJob.objects.filter(scope_id=scope_id).values(
            "session_id",
            "status",
            "lease_until",
            "input_watermark",
            "last_success_watermark",
            "backoff_until",
        )
    }
    outputs = dict(PipelineOutput.objects.filter(scope_id=scope_id).values_list("session_id", "watermark"))
    sessions = _sessions(scope_id, config.polluted_origins, newer_than=now - config.max_age)
    for session in sorted(sessions, key=lambda s: s.watermark):
        if session.polluted or session.newest_at < now - config.max_age:
            continue
        if not ignore_idle and session.newest_at > now - config.idle:
            continue
        if outputs.get(session.session_id, 0) >= session.watermark:
            continue
        job = jobs.get(session.session_id)
        if job is not None and not _claimable(dict(job), session.watermark, now):
            continue
        yield session


def _claimable(job: dict[str, Any], watermark: int, now: datetime) -> bool:
    """The claim rule on a job row (the claim re-checks it under the lock)."""
    if job["last_success_watermark"] >= watermark:
        return False
    if job["status"] == PipelineJob.Status.RUNNING and job["lease_until"] and job["lease_until"] > now:
        return False
    if watermark > job["input_watermark"]:
        return True
    if job["status"] == PipelineJob.Status.EXHAUSTED:
        return False
    return not (job["backoff_until"] and job["backoff_until"] > now)


def claimable(job: PipelineJob, watermark: int, now: datetime) -> bool:
    return _claimable(
        {
            "status": job.status,
            "lease_until": job.lease_until,
            "input_watermark": job.input_watermark,
            "last_success_watermark": job.last_success_watermark,
            "backoff_until": job.backoff_until,
        },
        watermark,
        now,
    )


def running_jobs(*, now: datetime) -> int:
    return PipelineJob.objects.filter(status=PipelineJob.Status.RUNNING, lease_until__gt=now).count()


def scope_cursor(*, scope_id: str) -> int:
    """The highest source position a successful Phase 1 covered in the scope (0: none)."""
    found = PipelineJob.objects.filter(scope_id=scope_id).aggregate(cursor=Max("last_success_watermark"))
    return int(found["cursor"] or 0)


def scope_high_watermark(*, scope_id: str) -> int:
    found = (
        ScopeState.objects.filter(scope_id=scope_id).values_list("last_source_position", flat=True).first()
    )
    return int(found or 0)


def pipeline_counters(*, scope_id: str | None = None) -> dict[str, int]:
    """Counter name -> value (one scope, or summed over all)."""
    counters = {name: 0 for name in PipelineCounter.Name.values}
    rows = PipelineCounter.objects.all()
    if scope_id is not None:
        rows = rows.filter(scope_id=scope_id)
    for name, value in rows.values_list("name", "value"):
        counters[name] += value
    return counters
