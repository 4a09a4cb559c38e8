"""Running the pipeline: scan, one Phase 1 job, one Phase 2 job, one in-process pass.

Celery tasks, ``manage.py run_pipeline`` and ``POST /v1/memory/flush`` all come through here.
The generator runs between the claim and the commit transactions, never inside one; every
write is a service call. Logs carry ids, states, counts and codes only.
"""

from __future__ import annotations

import logging
import os
import socket
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from django.utils import timezone

from powercontext.pipeline import generators
from powercontext.pipeline import selectors as selectors
from powercontext.pipeline.config import PipelineConfig, pipeline_config
from powercontext.pipeline.extract import Committed, phase1_claim, phase1_commit
from powercontext.pipeline.generation import Generator, GeneratorResult
from powercontext.pipeline.materialize import Materialized, phase2_claim, phase2_fail, phase2_materialize
from powercontext.pipeline.models import PipelineScopeJob
from powercontext.pipeline.projection import bind, project
from powercontext.pipeline.redact import redact_text

logger = logging.getLogger("powercontext.pipeline")

# Isolation probes one phase1_run may chain (a bisection needs about log2(sources) per failing
# source); a job with more left stays ``isolating`` and the next run goes on.
MAX_PROBES = 32


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def phase1_run(
    *,
    scope_id: str,
    session_id: str,
    worker: str | None = None,
    generator: Generator | None = None,
    config: PipelineConfig | None = None,
) -> Committed | None:
    """Claim, project, generate, bind and commit one session. None: not claimed (or the
    pipeline is off). A generator that raises is a ``failed`` result, never a crash. While the
    job isolates a failing source (``extract.py``), its probes follow one another here, at most
    ``MAX_PROBES``; the result is the last commit's."""
    config = config or pipeline_config()
    generator = generator or generators.configured_generator()
    if generator is None:
        return None
    committed: Committed | None = None
    for _ in range(MAX_PROBES + 1):
        step = _phase1_attempt(
            scope_id=scope_id, session_id=session_id, worker=worker, generator=generator, config=config
        )
        if step is None:
            break
        committed = step
        if not step.again:
            break
    return committed


def _phase1_attempt(
    *, scope_id: str, session_id: str, worker: str | None, generator: Generator, config: PipelineConfig
) -> Committed | None:
    claim = phase1_claim(
        scope_id=scope_id,
        session_id=session_id,
        worker_id=worker or worker_id(),
        now=timezone.now(),
        config=config,
    )
    if claim is None:
        return None
    sources = selectors.session_sources(scope_id=scope_id, session_id=session_id, up_to=claim.upto)
    if not sources:  # every source was set aside: nothing left to say about the session
        return phase1_commit(
            claim=claim,
            result=GeneratorResult(outcome="no_output"),
            generator=generator.name,
            now=timezone.now(),
            config=config,
        )
    try:
        projection = project(
            scope_id=scope_id,
            session_id=session_id,
            sources=sources,
            budget_bytes=config.projection_bytes,
            redact=redact_text,
        )
    except Exception as exc:  # a source the projection or redaction cannot handle: a failed attempt
        logger.warning("pipeline phase1 projection raised job=%s error=%s", claim.job_pk, type(exc).__name__)
        return phase1_commit(
            claim=claim,
            result=GeneratorResult(outcome="failed", error_code="projection_exception"),
            generator=generator.name,
            now=timezone.now(),
            config=config,
        )
    try:
        raw = generator.generate(projection)
    except Exception as exc:  # a broken generator is a failed attempt, counted and retried
        logger.warning("pipeline phase1 generator raised job=%s error=%s", claim.job_pk, type(exc).__name__)
        raw = GeneratorResult(outcome="failed", error_code="generator_exception")
    bound = bind(raw, session_source_ids=frozenset(s.source_id for s in sources), redact=redact_text)
    return phase1_commit(
        claim=claim, result=bound, generator=generator.name, now=timezone.now(), config=config
    )


def phase2_run(
    *, scope_id: str, worker: str | None = None, force: bool = False, config: PipelineConfig | None = None
) -> Materialized | None:
    """Take the scope's Phase 2 lease and materialize. None: another worker holds it, or the
    cooldown runs (``force``: an operator's explicit pass ignores the cooldown)."""
    config = config or pipeline_config()
    claim = phase2_claim(
        scope_id=scope_id, worker_id=worker or worker_id(), now=timezone.now(), config=config, force=force
    )
    if claim is None:
        return None
    try:
        return phase2_materialize(claim=claim, now=timezone.now(), config=config)
    except Exception as exc:
        phase2_fail(
            claim=claim, now=timezone.now(), config=config, error_code=f"exception:{type(exc).__name__}"
        )
        raise


@dataclass
class Plan:
    phase1: list[tuple[str, selectors.SessionInfo]] = field(default_factory=list)
    phase2: list[str] = field(default_factory=list)


def scan(
    *, scope_id: str | None = None, ignore_idle: bool = False, config: PipelineConfig | None = None
) -> Plan:
    """What to run now: eligible sessions (at most ``run_cap``, and no more than the running-job
    cap leaves room for) and the scopes whose Phase 2 may run."""
    config = config or pipeline_config()
    plan = Plan()
    if not generators.enabled():
        return plan
    now = timezone.now()
    room = min(config.run_cap, max(config.running_cap - selectors.running_jobs(now=now), 0))
    for scope in selectors.pipeline_scopes(config=config, scope_id=scope_id):
        if len(plan.phase1) >= room:
            break
        for session in selectors.eligible_sessions(
            scope_id=scope, now=now, config=config, ignore_idle=ignore_idle
        ):
            if len(plan.phase1) >= room:
                break
            plan.phase1.append((scope, session))
    jobs = PipelineScopeJob.objects.exclude(status=PipelineScopeJob.Status.RUNNING, lease_until__gt=now)
    if scope_id is not None:
        jobs = jobs.filter(scope_id=scope_id)
    plan.phase2 = sorted(jobs.values_list("scope_id", flat=True))
    return plan


@dataclass
class PassReport:
    outcomes: Counter[str] = field(default_factory=Counter)
    processed_sources: int = 0
    phase2: dict[str, Materialized | None] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return self.processed_sources > 0 or any(m is not None and m.changed for m in self.phase2.values())


def run_pass(
    *,
    scope_id: str | None = None,
    ignore_idle: bool = False,
    progress: Callable[[int, int], None] | None = None,
    config: PipelineConfig | None = None,
    generator: Generator | None = None,
) -> PassReport:
    """One bounded pass in this process: Phase 1 over the eligible sessions, then Phase 2 (forced
    past its cooldown) for every scope with pipeline state. ``progress(done, total)`` is called
    after each job."""
    config = config or pipeline_config()
    report = PassReport()
    generator = generator or generators.configured_generator()
    if generator is None:
        return report
    plan = scan(scope_id=scope_id, ignore_idle=ignore_idle, config=config)
    me = worker_id()
    total = len(plan.phase1)
    scopes = set(plan.phase2)
    for done, (scope, session) in enumerate(plan.phase1, start=1):
        committed = phase1_run(
            scope_id=scope, session_id=session.session_id, worker=me, generator=generator, config=config
        )
        outcome = committed.outcome if committed is not None else "not_claimed"
        report.outcomes[outcome] += 1
        if outcome in ("output", "no_output"):
            report.processed_sources += session.source_count
        if committed is not None and committed.phase2:
            scopes.add(scope)
        if progress is not None:
            progress(done, total)
    for scope in sorted(scopes):
        report.phase2[scope] = phase2_run(scope_id=scope, worker=me, force=True, config=config)
    logger.info("pipeline pass sessions=%s outcomes=%s scopes=%s", total, dict(report.outcomes), len(scopes))
    return report
