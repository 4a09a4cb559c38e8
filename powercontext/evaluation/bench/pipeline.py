"""The ``pipeline`` bench section: Phase 1 scan + claim overhead per session, Phase 2
materialization time for N sessions with the ``rules`` generator, and prepare p50 while the
pipeline runs vs idle (target: at most 1.5x)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.utils import timezone

from powercontext.evaluation.bench.common import percentile, timed
from powercontext.memory.sources import source_capture
from powercontext.pipeline import runner
from powercontext.pipeline.config import pipeline_config
from powercontext.pipeline.extract import phase1_claim
from powercontext.pipeline.models import PipelineJob
from powercontext.pipeline.rules import RulesGenerator
from powercontext.prepare.application import PrepareRequest, ScopedContextApplication

SCOPE = "bench-pipeline"
BUSY_SCOPE = "bench-pipeline-busy"
PROBE_SCOPE = "bench-pipeline-probe"
WORDS = ("cache", "deploy", "resolver", "socket", "lint", "staging", "replica", "queue", "token", "index")


def _seed(scope_id: str, sessions: int) -> None:
    for n in range(sessions):
        word = WORDS[n % len(WORDS)]
        meta = {"session_id": f"bench-{n}", "origin": "bench"}
        source_capture(
            scope_id=scope_id,
            source_id=f"{scope_id}-{n}-a",
            content=f"please look at the {word} problem number {n}",
            metadata=meta,
        )
        source_capture(
            scope_id=scope_id,
            source_id=f"{scope_id}-{n}-b",
            content=f"remember: the {word} setting for service {n} is {n * 7}",
            metadata=meta,
        )


def _p(samples: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(samples, 0.5), 3), "p95_ms": round(percentile(samples, 0.95), 3)}


def bench_pipeline(sessions: int, samples: int, write: Callable[[str], Any]) -> dict[str, Any]:
    config = pipeline_config().with_changes(run_cap=sessions, running_cap=sessions)
    generator = RulesGenerator()
    _seed(SCOPE, sessions)
    results: dict[str, Any] = {"sessions": sessions}

    started = time.perf_counter()
    plan = runner.scan(scope_id=SCOPE, ignore_idle=True, config=config)
    results["scan_ms"] = round((time.perf_counter() - started) * 1000, 1)
    results["scan_ms_per_session"] = round(results["scan_ms"] / max(len(plan.phase1), 1), 3)

    phase1: list[float] = []
    for _, session in plan.phase1:
        start = time.perf_counter()
        runner.phase1_run(
            scope_id=SCOPE, session_id=session.session_id, worker="bench", generator=generator, config=config
        )
        phase1.append((time.perf_counter() - start) * 1000)
    results["phase1_job"] = _p(phase1)
    results["phase1_total_s"] = round(sum(phase1) / 1000, 2)

    started = time.perf_counter()
    done = runner.phase2_run(scope_id=SCOPE, worker="bench", force=True, config=config)
    results["phase2_materialize_s"] = round(time.perf_counter() - started, 2)
    results["phase2_remembered"] = done.remembered if done is not None else 0
    started = time.perf_counter()
    runner.phase2_run(scope_id=SCOPE, worker="bench", force=True, config=config)
    results["phase2_unchanged_ms"] = round((time.perf_counter() - started) * 1000, 1)
    write(f"pipeline phase 1/2: {results}")

    results["prepare"] = _prepare_idle_vs_busy(samples, sessions)
    # Claim overhead alone, on a separate probe scope (last: its open leases count against the running-job cap).
    _seed(PROBE_SCOPE, samples)
    probe: list[float] = []
    for n in range(samples):
        start = time.perf_counter()
        phase1_claim(
            scope_id=PROBE_SCOPE,
            session_id=f"bench-{n}",
            worker_id="bench",
            now=timezone.now(),
            config=config,
        )
        probe.append((time.perf_counter() - start) * 1000)
    results["claim"] = _p(probe)

    return results


def _prepare_idle_vs_busy(samples: int, sessions: int) -> dict[str, Any]:
    app = ScopedContextApplication()
    queries = [f"{WORDS[n % len(WORDS)]} setting for service {n}" for n in range(samples)]
    position = iter(range(10**9))

    def prepare() -> None:
        app.prepare(PrepareRequest(scope_id=SCOPE, query=queries[next(position) % samples], max_bytes=8000))

    timed(prepare, 20)  # warm up
    idle = timed(prepare, samples)
    _seed(BUSY_SCOPE, sessions)
    # The pipeline runs in its own process, as a Celery worker would (a thread here would mostly
    # measure the GIL, not the database).
    worker = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "run_pipeline",
            "--scope",
            BUSY_SCOPE,
            "--ignore-idle",
            "--no-progress",
        ],
        cwd=settings.BASE_DIR,
        env={
            **os.environ,
            "POWERCONTEXT_PIPELINE_RUN_CAP": str(sessions),
            "POWERCONTEXT_PIPELINE_RUNNING_CAP": str(sessions),
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    busy: list[float] = []
    while worker.poll() is None or len(busy) < samples:  # measure for as long as the pipeline runs
        busy.extend(timed(prepare, 1))
    worker.wait()
    jobs = PipelineJob.objects.filter(scope_id=BUSY_SCOPE, status=PipelineJob.Status.DONE).count()
    ratio = statistics.median(busy) / statistics.median(idle)
    return {
        "idle": _p(idle),
        "busy": _p(busy),
        "busy_vs_idle_p50": round(ratio, 2),
        "pipeline_jobs_during_busy": jobs,
        "busy_samples": len(busy),
    }
