"""Phase 1 writes: claim a session, commit its output (fenced by the ownership token).

At-least-once compute, idempotent persistence (seed 5.x). The claim is one conditional write
under a row lock (PostgreSQL ``SELECT … FOR UPDATE`` on the job row, inserted first with
``ON CONFLICT DO NOTHING``; SQLite: the IMMEDIATE transaction holds the write lock). The
generator runs between the two transactions, outside any. The commit only lands while the
caller's token still owns the running job, so a worker whose lease was taken over can never
overwrite the new owner's result.

Failure isolation: when a session spends its whole retry budget on failures its sources can
cause (anything but a provider-wide code, see ``SERVICE_WIDE_ERRORS``; a lapsed lease counts,
as the worker was killed), the job does not go ``exhausted`` but starts ``isolating``. Each
later attempt (a *probe*) runs the session's prefix up to ``probe_upto``: a probe that passes
proves its prefix good, one that fails (or dies) proves it bad, and the job bisects the
sources between the good and the bad prefix until one source is left: that source is set
aside (``PipelineSetAside``, with the failure code) and left out of every later projection.
The next probe is the whole session again; when it passes its result is the session's output.
Probes spend no retries (each one narrows the search, so isolation ends), provider-wide
failures during one do, as before.
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
from powercontext.pipeline.models import (
    PipelineCounter,
    PipelineJob,
    PipelineOutput,
    PipelineScopeJob,
    PipelineSetAside,
)
from powercontext.pipeline.selectors import claimable, pipeline_session, session_positions

logger = logging.getLogger("powercontext.pipeline")

# Failure codes that say nothing about the session's sources (the provider or the configuration
# is down): they spend retries and exhaust the job, but never start isolation or set a source aside.
# A generator ``timeout`` is one of them: during an outage every probe times out, and taking that
# for the sources' fault would set every source of the session aside. A source that kills its
# worker (the lease lapses) still starts isolation.
SERVICE_WIDE_ERRORS = frozenset(
    {"not_configured", "unavailable", "rate_limited", "auth_failed", "provider_error", "timeout"}
)


@dataclass(frozen=True)
class Claim:
    """``upto``: the attempt covers the session's sources up to this position (not set aside);
    the watermark itself, except for an isolation probe of a prefix."""

    job_pk: int
    token: str
    scope_id: str
    session_id: str
    watermark: int
    upto: int


@dataclass(frozen=True)
class Committed:
    """What a commit did. ``outcome`` is the job's outcome code, or ``lost`` when the token no
    longer owned the job (nothing was written). ``phase2`` asks the caller to run Phase 2;
    ``again`` to claim the session once more (an isolation probe is due)."""

    outcome: str
    phase2: bool = False
    again: bool = False


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
    if job.status == PipelineJob.Status.RUNNING:
        # The previous attempt died without committing (the worker was killed, e.g. at its time
        # limit on a poisoned source). A dead probe proves its prefix bad; a dead attempt on this
        # watermark spends a retry like a failure, and the last one starts isolation, so a source
        # that kills every worker is set aside instead of looping or blocking its session.
        if job.isolating:
            job.isolate_bad, job.isolate_reason = job.probe_upto, "lease_expired"
            counter_add(scope_id, PipelineCounter.Name.FAILED)
        elif session.watermark <= job.input_watermark:
            job.retries_left = max(job.retries_left - 1, 0)
            if job.retries_left == 0:
                _start_isolation(job, bad=job.input_watermark, reason="lease_expired", config=config)
                counter_add(scope_id, PipelineCounter.Name.FAILED)
                logger.warning("pipeline phase1 isolating job=%s error=lease_expired", job.pk)
    upto = session.watermark
    if job.isolating:
        upto = _next_probe(job, session.watermark)
    token = secrets.token_hex(16)
    changes: dict[str, object] = {
        "status": PipelineJob.Status.RUNNING,
        "ownership_token": token,
        "worker_id": worker_id[:128],
        "lease_until": now + config.lease,
        "input_watermark": session.watermark,
        "outcome": "",
        "started_at": now,
        "finished_at": None,
        "isolating": job.isolating,
        "isolate_good": job.isolate_good,
        "isolate_bad": job.isolate_bad,
        "isolate_reason": job.isolate_reason,
        "probe_upto": upto if job.isolating else 0,
        "error_code": "",
    }
    if session.watermark > job.input_watermark:
        changes.update(retry_budget=config.retry_budget, retries_left=config.retry_budget, backoff_until=None)
    else:
        changes["retries_left"] = job.retries_left
    PipelineJob.objects.filter(pk=job.pk).update(**changes)
    counter_add(scope_id, PipelineCounter.Name.CLAIMED)
    logger.info(
        "pipeline phase1 claimed job=%s watermark=%s probe=%s", job.pk, session.watermark, job.isolating
    )
    return Claim(
        job_pk=job.pk,
        token=token,
        scope_id=scope_id,
        session_id=session_id,
        watermark=session.watermark,
        upto=upto,
    )


def _start_isolation(job: PipelineJob, *, bad: int, reason: str, config: PipelineConfig) -> None:
    """Turn ``job`` (in memory) into an isolating one whose sources up to ``bad`` failed with
    ``reason``; the retry budget is restored for the provider-wide failures a probe may meet."""
    job.isolating = True
    job.isolate_good = 0
    job.isolate_bad = bad
    job.isolate_reason = reason
    job.retries_left = config.retry_budget


def _next_probe(job: PipelineJob, watermark: int) -> int:
    """The end position of the isolating ``job``'s next probe, setting aside (inside the
    caller's transaction) the source the bisection has cornered, if any.

    Between the good prefix and the bad one lie the suspects: more than one, probe the prefix
    ending at the last of the lower half; exactly one, set it aside and probe the whole
    session again (the bad prefix is then unknown); none (the failure did not recur), the same.
    """
    while job.isolate_bad:
        positions = session_positions(scope_id=job.scope_id, session_id=job.session_id, up_to=job.isolate_bad)
        suspects = [(position, source_id) for position, source_id in positions if position > job.isolate_good]
        if len(suspects) > 1:
            return suspects[len(suspects) // 2 - 1][0]
        if suspects:
            position, source_id = suspects[0]
            reason = job.isolate_reason or "failed"
            PipelineSetAside.objects.bulk_create(
                [
                    PipelineSetAside(
                        scope_id=job.scope_id,
                        session_id=job.session_id,
                        source_id=source_id,
                        position=position,
                        reason=reason,
                    )
                ],
                ignore_conflicts=True,
            )
            counter_add(job.scope_id, PipelineCounter.Name.SET_ASIDE)
            logger.warning("pipeline phase1 set a source aside job=%s reason=%s", job.pk, reason)
        job.isolate_bad = 0
    return watermark


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
    the error code kept; the last retry marks the job ``exhausted`` on this watermark when the
    code is provider-wide, and ``isolating`` otherwise. An isolation probe's result moves the
    bisection (``isolating``, ``again``) and stores nothing, unless it covered the whole session.
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
    if claim.upto < claim.watermark:
        # An isolation probe of a prefix passed: its sources are good; its result is not the
        # session's (the rest is missing), so nothing is stored and the next probe is due.
        PipelineJob.objects.filter(pk=job.pk).update(
            **base, status=PipelineJob.Status.ISOLATING, outcome=result.outcome, isolate_good=claim.upto
        )
        logger.info("pipeline phase1 probe passed job=%s", job.pk)
        return Committed(outcome=PipelineJob.Status.ISOLATING, again=True)
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
        isolating=False,
        isolate_good=0,
        isolate_bad=0,
        isolate_reason="",
        probe_upto=0,
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
    error_code = (result.error_code or result.outcome)[:64]
    name = (
        PipelineCounter.Name.SCHEMA_INVALID
        if result.outcome == "schema_invalid"
        else PipelineCounter.Name.FAILED
    )
    if error_code not in SERVICE_WIDE_ERRORS and (job.isolating or job.retries_left <= 1):
        # The sources may be the cause: a failing probe proves its prefix bad, and the last
        # retry of a whole session starts isolation instead of exhausting the job.
        if not job.isolating:
            _start_isolation(job, bad=claim.watermark, reason=error_code, config=config)
        else:
            job.isolate_bad, job.isolate_reason = claim.upto, error_code
        PipelineJob.objects.filter(pk=job.pk).update(
            **base,
            status=PipelineJob.Status.ISOLATING,
            outcome=result.outcome,
            error_code=error_code,
            retries_left=job.retries_left,
            backoff_until=None,
            isolating=True,
            isolate_good=job.isolate_good,
            isolate_bad=job.isolate_bad,
            isolate_reason=job.isolate_reason,
        )
        counter_add(claim.scope_id, name)
        logger.warning("pipeline phase1 isolating job=%s error=%s", job.pk, error_code)
        return Committed(outcome=PipelineJob.Status.ISOLATING, again=True)
    left = max(job.retries_left - 1, 0)
    spent = job.retry_budget - left
    status = PipelineJob.Status.EXHAUSTED if left == 0 else PipelineJob.Status.FAILED
    PipelineJob.objects.filter(pk=job.pk).update(
        **base,
        status=status,
        outcome=result.outcome,
        error_code=error_code,
        retries_left=left,
        backoff_until=now + config.backoff * (2 ** max(spent - 1, 0)),
    )
    counter_add(claim.scope_id, name)
    if status == PipelineJob.Status.EXHAUSTED:
        counter_add(claim.scope_id, PipelineCounter.Name.EXHAUSTED)
    logger.warning("pipeline phase1 %s job=%s error=%s retries_left=%s", status, job.pk, error_code, left)
    return Committed(outcome=status)
