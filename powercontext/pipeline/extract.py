"""Phase 1 writes: claim a session, commit its output (fenced by the ownership token).

At-least-once compute, idempotent persistence (seed 5.x). The claim is one conditional write
under a row lock (PostgreSQL ``SELECT … FOR UPDATE`` on the job row, inserted first with
``ON CONFLICT DO NOTHING``; SQLite: the IMMEDIATE transaction holds the write lock). The
generator runs between the two transactions, outside any. The commit only lands while the
caller's token still owns the running job, so a worker whose lease was taken over can never
overwrite the new owner's result.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import asdict, dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import F

from powercontext.pipeline.config import PipelineConfig
from powercontext.pipeline.generation import GeneratorResult
from powercontext.pipeline.models import PipelineCounter, PipelineJob, PipelineOutput, PipelineScopeJob
from powercontext.pipeline.selectors import claimable, pipeline_session

logger = logging.getLogger("powercontext.pipeline")


@dataclass(frozen=True)
class Claim:
    job_pk: int
    token: str
    scope_id: str
    session_id: str
    watermark: int


@dataclass(frozen=True)
class Committed:
    """What a commit did. ``outcome`` is the job's outcome code, or ``lost`` when the token no
    longer owned the job (nothing was written). ``phase2`` asks the caller to run Phase 2."""

    outcome: str
    phase2: bool = False


def counter_add(scope_id: str, name: str, amount: int = 1) -> None:
    """Add to one counter inside the caller's transaction."""
    if amount <= 0:
        return
    if not PipelineCounter.objects.filter(scope_id=scope_id, name=name).update(value=F("value") + amount):
        PipelineCounter.objects.bulk_create(
            [PipelineCounter(scope_id=scope_id, name=name, value=0)], ignore_conflicts=True
        )
        PipelineCounter.objects.filter(scope_id=scope_id, name=name).update(value=F("value") + amount)


def request_phase2(scope_id: str) -> None:
    """Mark the scope's Phase 2 as pending (inside the caller's transaction). A materializing
    Phase 2 holds this row locked until it commits, so the mark lands after it and is never lost."""
    if PipelineScopeJob.objects.filter(scope_id=scope_id).update(pending=True):
        return
    PipelineScopeJob.objects.bulk_create(
        [PipelineScopeJob(scope_id=scope_id, pending=True)], ignore_conflicts=True
    )
    PipelineScopeJob.objects.filter(scope_id=scope_id).update(pending=True)


def _lock_job(scope_id: str, session_id: str) -> PipelineJob:
    jobs = PipelineJob.objects.select_for_update().filter(scope_id=scope_id, session_id=session_id)
    job = jobs.first()
    if job is None:
        PipelineJob.objects.bulk_create(
            [PipelineJob(scope_id=scope_id, session_id=session_id, status=PipelineJob.Status.FAILED)],
            ignore_conflicts=True,
        )
        job = jobs.get()
    return job


@transaction.atomic(durable=True)
def phase1_claim(
    *, scope_id: str, session_id: str, worker_id: str, now: datetime, config: PipelineConfig
) -> Claim | None:
    """Claim the session's job for its current watermark, or return None.

    Succeeds only when the session exists and is not polluted, no valid lease is held, the
    watermark is not covered by a success, and the backoff has passed and the budget is not
    exhausted -- unless a newer watermark arrived, which resets the budget. Success sets a fresh
    random ownership token, the worker, the lease and the input watermark, and clears the error.
    """
    session = pipeline_session(scope_id=scope_id, session_id=session_id, config=config)
    if session is None or session.polluted or scope_id in config.excluded_scopes:
        return None
    job = _lock_job(scope_id, session_id)
    if not claimable(job, session.watermark, now):
        return None
    if job.status == PipelineJob.Status.RUNNING and session.watermark <= job.input_watermark:
        # The previous attempt on this watermark died without committing (the worker was killed,
        # e.g. at its timeout on a poisoned source): that attempt spends a retry like a failure,
        # so a source that kills every worker ends ``exhausted`` instead of looping forever.
        job.retries_left = max(job.retries_left - 1, 0)
        if job.retries_left == 0:
            PipelineJob.objects.filter(pk=job.pk).update(
                status=PipelineJob.Status.EXHAUSTED,
                ownership_token="",
                lease_until=None,
                retries_left=0,
                outcome="failed",
                error_code="lease_expired",
                finished_at=now,
            )
            counter_add(scope_id, PipelineCounter.Name.FAILED)
            counter_add(scope_id, PipelineCounter.Name.EXHAUSTED)
            logger.warning("pipeline phase1 exhausted job=%s error=lease_expired", job.pk)
            return None
    token = secrets.token_hex(16)
    changes = {
        "status": PipelineJob.Status.RUNNING,
        "ownership_token": token,
        "worker_id": worker_id[:128],
        "lease_until": now + config.lease,
        "input_watermark": session.watermark,
        "error_code": "",
        "outcome": "",
        "started_at": now,
        "finished_at": None,
    }
    if session.watermark > job.input_watermark:
        changes.update(retry_budget=config.retry_budget, retries_left=config.retry_budget, backoff_until=None)
    else:
        changes["retries_left"] = job.retries_left
    PipelineJob.objects.filter(pk=job.pk).update(**changes)
    counter_add(scope_id, PipelineCounter.Name.CLAIMED)
    logger.info("pipeline phase1 claimed job=%s watermark=%s", job.pk, session.watermark)
    return Claim(
        job_pk=job.pk, token=token, scope_id=scope_id, session_id=session_id, watermark=session.watermark
    )


def _before_commit() -> None:
    """A seam for crash-window tests: runs inside the commit transaction before any write."""


def _owned(claim: Claim) -> PipelineJob | None:
    return (
        PipelineJob.objects.select_for_update()
        .filter(pk=claim.job_pk, ownership_token=claim.token, status=PipelineJob.Status.RUNNING)
        .first()
    )


def _items(result: GeneratorResult) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    memories = [{**asdict(m), "evidence": list(m.evidence)} for m in result.memories]
    experiences = [{**asdict(e), "evidence": list(e.evidence)} for e in result.experiences]
    return memories, experiences


@transaction.atomic(durable=True)
def phase1_commit(
    *, claim: Claim, result: GeneratorResult, generator: str, now: datetime, config: PipelineConfig
) -> Committed:
    """Record a bound generator result for the claimed watermark, fenced by the token.

    ``output``: job done, the session's output upserted (never over a newer one), Phase 2
    requested. ``no_output``: job done, the previous output deleted, and Phase 2 requested only
    if something was deleted. ``failed`` / ``schema_invalid``: one retry spent, backoff doubled,
    the error code kept; the last retry marks the job ``exhausted`` on this watermark.
    """
    _before_commit()
    job = _owned(claim)
    if job is None:
        logger.info("pipeline phase1 lost job=%s", claim.job_pk)
        return Committed(outcome="lost")
    base: dict[str, object] = {
        "ownership_token": "",
        "lease_until": None,
        "finished_at": now,
        "usage": dict(result.usage),
    }
    if result.outcome in ("failed", "schema_invalid"):
        return _fail(job, claim, result, base, now, config)
    phase2 = False
    if result.outcome == "output":
        memories, experiences = _items(result)
        current = PipelineOutput.objects.filter(scope_id=claim.scope_id, session_id=claim.session_id).first()
        if current is None:
            PipelineOutput.objects.create(
                scope_id=claim.scope_id,
                session_id=claim.session_id,
                watermark=claim.watermark,
                memories=memories,
                experiences=experiences,
                generator=generator,
            )
            phase2 = True
        elif current.watermark <= claim.watermark:
            phase2 = (current.memories, current.experiences) != (memories, experiences)
            PipelineOutput.objects.filter(pk=current.pk).update(
                watermark=claim.watermark,
                memories=memories,
                experiences=experiences,
                generator=generator,
                updated_at=now,
            )
        counter_add(claim.scope_id, PipelineCounter.Name.OUTPUT)
    else:
        deleted, _ = PipelineOutput.objects.filter(
            scope_id=claim.scope_id, session_id=claim.session_id, watermark__lte=claim.watermark
        ).delete()
        phase2 = deleted > 0
        counter_add(
            claim.scope_id,
            PipelineCounter.Name.NO_OUTPUT_DELETING if phase2 else PipelineCounter.Name.NO_OUTPUT_FIRST,
        )
    if phase2:
        request_phase2(claim.scope_id)
    PipelineJob.objects.filter(pk=job.pk).update(
        **base,
        status=PipelineJob.Status.DONE,
        outcome=result.outcome,
        error_code="",
        last_success_watermark=claim.watermark,
        backoff_until=None,
    )
    logger.info("pipeline phase1 done job=%s outcome=%s phase2=%s", job.pk, result.outcome, phase2)
    return Committed(outcome=result.outcome, phase2=phase2)


def _fail(
    job: PipelineJob,
    claim: Claim,
    result: GeneratorResult,
    base: dict[str, object],
    now: datetime,
    config: PipelineConfig,
) -> Committed:
    left = max(job.retries_left - 1, 0)
    spent = job.retry_budget - left
    status = PipelineJob.Status.EXHAUSTED if left == 0 else PipelineJob.Status.FAILED
    error_code = (result.error_code or result.outcome)[:64]
    PipelineJob.objects.filter(pk=job.pk).update(
        **base,
        status=status,
        outcome=result.outcome,
        error_code=error_code,
        retries_left=left,
        backoff_until=now + config.backoff * (2 ** max(spent - 1, 0)),
    )
    name = (
        PipelineCounter.Name.SCHEMA_INVALID
        if result.outcome == "schema_invalid"
        else PipelineCounter.Name.FAILED
    )
    counter_add(claim.scope_id, name)
    if status == PipelineJob.Status.EXHAUSTED:
        counter_add(claim.scope_id, PipelineCounter.Name.EXHAUSTED)
    logger.warning("pipeline phase1 %s job=%s error=%s retries_left=%s", status, job.pk, error_code, left)
    return Committed(outcome=status)
