"""What an operator needs to see without reading logs: the state behind ``GET /health/detail`` and
the state gauges of ``GET /metrics``.

Everything here is read at request time from the database and the broker, so it is the same in
every app server process. It names no scope, query, entry or text: counts, ages, states and
Celery node names (which the operator chose) only.

Access: ``Authorization: Bearer <POWERCONTEXT_OPERATOR_TOKEN>`` (the monitoring token, not an API
token of the ``operator`` role) or a logged-in staff user.
"""

from __future__ import annotations

import hmac
import logging
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django.db.models import Count, Max
from django.http import HttpRequest
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from context_api.errors import database_unavailable
from powercontext import __version__
from powercontext.core import broker, heartbeat
from powercontext.core.models import ExperienceVector, MemoryEntryVector, MemoryMembership
from powercontext.core.recall import recallable_experience_heads
from powercontext.pipeline import selectors as pipeline_selectors
from powercontext.pipeline.config import pipeline_config
from powercontext.pipeline.models import PipelineJob

logger = logging.getLogger("powercontext.operator")

QUEUES = ("celery", "periodic")


@dataclass
class Snapshot:
    database: str  # reachable | unreachable
    # Seconds since the database figures below were read: 0 when read for this answer; with the
    # database unreachable, the age of this process's last reading (None: it has none).
    database_values_age_seconds: float | None
    broker: str  # not_configured | reachable | unreachable
    queue_depth: dict[str, int]
    workers: dict[str, float]  # node -> seconds since its last heartbeat
    workers_alive: int
    worker_last_seen_seconds: float | None  # the freshest heartbeat's age
    embed_backlog: int
    # Vectors stored so far (the largest Memory and Experience vector ids: every insert, a
    # rebuild's too), vectors stored per second since this process's earlier reading (within
    # RATE_WINDOW_SECONDS; None at its first), and embed_backlog / that rate (0 without a
    # backlog; None without a rate or while nothing is stored).
    embed_vectors_stored: int
    embed_rate_per_second: float | None
    embed_eta_seconds: float | None
    pipeline_jobs: dict[str, int]
    pipeline_eligible_sessions: int
    pipeline_oldest_eligible_seconds: float | None
    rebuild_in_progress: bool
    rebuild_seconds: float | None
    taken_seconds: float = field(default=0.0)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class _DatabaseFigures:
    """What the snapshot reads from the database, kept per process as the last known values."""

    workers: dict[str, float]
    workers_alive: int
    worker_last_seen_seconds: float | None
    embed_backlog: int
    embed_vectors_stored: int
    embed_rate_per_second: float | None
    embed_eta_seconds: float | None
    pipeline_jobs: dict[str, int]
    pipeline_eligible_sessions: int
    pipeline_oldest_eligible_seconds: float | None
    rebuild_in_progress: bool
    rebuild_seconds: float | None


# This process's last successful database reading and when it was taken (time.monotonic()).
_last_known: tuple[_DatabaseFigures, float] | None = None
_last_known_lock = threading.Lock()


def authorized(request: HttpRequest) -> bool:
    """The monitoring token (constant-time compare) or a staff session."""
    expected = settings.POWERCONTEXT_OPERATOR_TOKEN
    header = request.headers.get("Authorization", "")
    if expected and header.startswith("Bearer "):
        return hmac.compare_digest(header[len("Bearer ") :].encode(), expected.encode())
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated and user.is_staff)


def embed_backlog() -> int:
    """Active entry versions and recallable Experience heads still without a vector."""
    memory = MemoryMembership.objects.filter(
        to_revision__isnull=True, state=MemoryMembership.State.ACTIVE, entry_version__vector__isnull=True
    ).count()
    return int(memory + recallable_experience_heads().filter(experience_vector__isnull=True).count())


def vectors_stored() -> int:
    """Vectors stored so far: the largest Memory and Experience vector ids (primary keys, so
    O(1)); they grow with every insert and never fall, whatever is deleted."""
    memory = MemoryEntryVector.objects.aggregate(top=Max("id"))["top"] or 0
    experience = ExperienceVector.objects.aggregate(top=Max("id"))["top"] or 0
    return int(memory) + int(experience)


RATE_WINDOW_SECONDS = 300.0
# This process's readings of vectors_stored(): (time.monotonic(), vectors), oldest first, none
# older than RATE_WINDOW_SECONDS. Fed by every snapshot (/health/detail, /metrics scrapes).
_readings: deque[tuple[float, int]] = deque()
_readings_lock = threading.Lock()


def embed_progress(backlog: int, stored: int, now: float) -> tuple[float | None, float | None]:
    """(vectors stored per second, seconds until the backlog is embedded at that rate), from the
    oldest of this process's readings within the window (at least a second old); records this
    reading. ``(None, None)`` at a process's first reading; the ETA is 0 without a backlog and
    None while nothing is being stored."""
    with _readings_lock:
        while _readings and now - _readings[0][0] > RATE_WINDOW_SECONDS:
            _readings.popleft()
        earlier = _readings[0] if _readings and now - _readings[0][0] >= 1.0 else None
        if not _readings or now - _readings[-1][0] >= 1.0:
            _readings.append((now, stored))
    eta: float | None = 0.0 if backlog == 0 else None
    if earlier is None:
        return None, eta
    rate = max(0, stored - earlier[1]) / (now - earlier[0])
    if backlog and rate > 0:
        eta = round(backlog / rate, 1)
    return round(rate, 2), eta


def forget_readings() -> None:
    """Drop this process's vector readings (tests)."""
    with _readings_lock:
        _readings.clear()


def _pipeline() -> tuple[dict[str, int], int, float | None]:
    jobs = {state: 0 for state in PipelineJob.Status.values}
    for row in PipelineJob.objects.values("status").annotate(n=Count("pk")):
        jobs[str(row["status"])] = int(row["n"])
    config = pipeline_config()
    now = timezone.now()
    eligible, oldest = 0, None
    for scope in pipeline_selectors.pipeline_scopes(config=config):
        count, newest_at = pipeline_selectors.waiting_sessions(scope_id=scope, now=now, config=config)
        eligible += count
        if newest_at is not None:
            age = (now - newest_at).total_seconds()
            oldest = age if oldest is None else max(oldest, age)
    return jobs, eligible, oldest


def _broker() -> tuple[str, dict[str, int]]:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return "not_configured", {}
    depths = broker.queue_depths(QUEUES)
    return ("unreachable", {}) if depths is None else ("reachable", depths)


def _database_figures() -> _DatabaseFigures:
    now = timezone.now()
    period = float(settings.POWERCONTEXT_WORKER_HEARTBEAT_SECONDS)
    workers = {
        name[len(heartbeat.WORKER_PREFIX) :]: round((now - seen).total_seconds(), 3)
        for name, seen in heartbeat.seen(heartbeat.WORKER_PREFIX).items()
    }
    rebuild = heartbeat.seen(heartbeat.REBUILD).get(heartbeat.REBUILD)
    jobs, eligible, oldest = _pipeline()
    backlog, stored = embed_backlog(), vectors_stored()
    rate, eta = embed_progress(backlog, stored, time.monotonic())
    return _DatabaseFigures(
        workers=workers,
        workers_alive=sum(1 for age in workers.values() if heartbeat.worker_alive(age, period)),
        worker_last_seen_seconds=min(workers.values()) if workers else None,
        embed_backlog=backlog,
        embed_vectors_stored=stored,
        embed_rate_per_second=rate,
        embed_eta_seconds=eta,
        pipeline_jobs=jobs,
        pipeline_eligible_sessions=eligible,
        pipeline_oldest_eligible_seconds=round(oldest, 3) if oldest is not None else None,
        rebuild_in_progress=rebuild is not None,
        rebuild_seconds=round((now - rebuild).total_seconds(), 3) if rebuild is not None else None,
    )


_NOTHING_KNOWN = _DatabaseFigures(
    workers={},
    workers_alive=0,
    worker_last_seen_seconds=None,
    embed_backlog=0,
    embed_vectors_stored=0,
    embed_rate_per_second=None,
    embed_eta_seconds=None,
    pipeline_jobs={},
    pipeline_eligible_sessions=0,
    pipeline_oldest_eligible_seconds=None,
    rebuild_in_progress=False,
    rebuild_seconds=None,
)


def snapshot() -> Snapshot:
    """The operator's view now. With the database unreachable it still answers: the broker as
    read now, ``database="unreachable"`` and this process's last database reading (its age in
    ``database_values_age_seconds``; zeros and ``None`` when this process has none). Any other
    database error is raised."""
    global _last_known
    started = time.perf_counter()
    broker_state, depths = _broker()
    try:
        figures = _database_figures()
    except DatabaseError as exc:
        if not database_unavailable(exc):
            raise
        logger.warning("operator snapshot without the database error_class=%s", type(exc).__name__)
        with _last_known_lock:
            known = _last_known
        database, age = "unreachable", None
        figures = _NOTHING_KNOWN
        if known is not None:
            figures, age = known[0], round(time.monotonic() - known[1], 3)
    else:
        with _last_known_lock:
            _last_known = (figures, time.monotonic())
        database, age = "reachable", 0.0
    return Snapshot(
        database=database,
        database_values_age_seconds=age,
        broker=broker_state,
        queue_depth=depths,
        **asdict(figures),
        taken_seconds=round(time.perf_counter() - started, 4),
    )


def forget_last_known() -> None:
    """Drop this process's last database reading (tests)."""
    global _last_known
    with _last_known_lock:
        _last_known = None


class HealthDetailApi(APIView):
    """``GET /health/detail``: the snapshot, for operators only."""

    authentication_classes = ()
    permission_classes = ()

    operator = False

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        # Before DRF replaces request.user (no DRF authenticators here) with None.
        self.operator = authorized(request)
        return super().dispatch(request, *args, **kwargs)

    def get(self, request: Request) -> Response:
        if not self.operator:
            return Response(
                {
                    "error": {
                        "code": "forbidden",
                        "message": "The monitoring token (POWERCONTEXT_OPERATOR_TOKEN) or a staff log-in is required.",
                        "details": None,
                    }
                },
                status=403,
            )
        state = snapshot()
        problems = []
        if state.database == "unreachable":
            # Worker heartbeats cannot be read (nor written): no judgment on the workers.
            problems.append("database_unreachable")
        elif state.broker != "not_configured" and state.workers_alive == 0:
            problems.append("no_live_worker")
        if state.broker == "unreachable":
            problems.append("broker_unreachable")
        body = {
            "status": "degraded" if problems else "ok",
            "problems": problems,
            "version": __version__,
            **state.as_dict(),
        }
        return Response(body)
