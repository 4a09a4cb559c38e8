"""Phase 1 state: claims, fencing, crash windows, retries (deterministic stub generators)."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.db import connection, connections
from django.utils import timezone

from powercontext.pipeline import extract as pipeline_extract
from powercontext.pipeline import runner
from powercontext.pipeline.config import pipeline_config
from powercontext.pipeline.extract import phase1_claim, phase1_commit
from powercontext.pipeline.generation import GeneratorResult
from powercontext.pipeline.models import PipelineJob, PipelineOutput, PipelineSetAside
from powercontext.pipeline.selectors import eligible_sessions
from tests.pipeline.helpers import NO_OUTPUT, PROVIDER_DOWN, StubGenerator, capture, memory, output

SCOPE = "p1"


def claim(worker: str = "w1") -> pipeline_extract.Claim | None:
    return phase1_claim(
        scope_id=SCOPE, session_id="s1", worker_id=worker, now=timezone.now(), config=pipeline_config()
    )


def commit(c: pipeline_extract.Claim, result: GeneratorResult) -> pipeline_extract.Committed:
    return phase1_commit(
        claim=c, result=result, generator="stub", now=timezone.now(), config=pipeline_config()
    )


def job() -> PipelineJob:
    return PipelineJob.objects.get(scope_id=SCOPE, session_id="s1")


@pytest.mark.django_db
def test_a_claim_sets_a_fresh_token_lease_and_watermark_and_a_second_claim_fails() -> None:
    capture(SCOPE, "a", "remember: one")
    capture(SCOPE, "b", "remember: two")

    first = claim("w1")
    second = claim("w2")

    assert first is not None and second is None
    row = job()
    assert row.status == "running" and row.ownership_token == first.token and len(first.token) == 32
    assert row.worker_id == "w1" and row.input_watermark == 2 and row.lease_until > timezone.now()


@pytest.mark.django_db
def test_a_worker_whose_lease_expired_cannot_commit_and_the_new_owners_result_stands() -> None:
    capture(SCOPE, "a", "remember: one")
    old = claim("old")
    assert old is not None
    with time_machine.travel(timezone.now() + timedelta(hours=1)):
        new = claim("new")
        assert new is not None and new.token != old.token
        assert commit(new, output(memory("the new owner's fact", "a"))).outcome == "output"
        assert commit(old, output(memory("a stale fact", "a"))).outcome == "lost"

    saved = PipelineOutput.objects.get(scope_id=SCOPE)
    assert [m["text"] for m in saved.memories] == ["the new owner's fact"]
    assert job().status == "done" and job().last_success_watermark == 1


@pytest.mark.django_db
def test_a_crash_after_the_generator_but_before_commit_leaves_nothing_and_the_job_is_retaken(
    monkeypatch: Any,
) -> None:
    capture(SCOPE, "a", "remember: one")
    generator = StubGenerator(output(memory("fact", "a")))

    def crash() -> None:
        raise RuntimeError("worker died")

    monkeypatch.setattr(pipeline_extract, "_before_commit", crash)
    with pytest.raises(RuntimeError):
        runner.phase1_run(scope_id=SCOPE, session_id="s1", generator=generator)
    monkeypatch.undo()

    assert not PipelineOutput.objects.exists()
    assert job().status == "running" and job().last_success_watermark == 0
    assert runner.phase1_run(scope_id=SCOPE, session_id="s1", generator=generator) is None  # lease held
    with time_machine.travel(timezone.now() + timedelta(hours=1)):
        retaken = runner.phase1_run(scope_id=SCOPE, session_id="s1", generator=generator)
    assert retaken is not None and retaken.outcome == "output"
    assert PipelineOutput.objects.get(scope_id=SCOPE).watermark == 1 and len(generator.calls) == 2


@pytest.mark.django_db
def test_a_crash_after_commit_is_not_redone() -> None:
    capture(SCOPE, "a", "remember: one")
    generator = StubGenerator(output(memory("fact", "a")))
    assert runner.phase1_run(scope_id=SCOPE, session_id="s1", generator=generator) is not None

    # The message is redelivered (acks_late) or the scan runs again: nothing is claimed.
    assert runner.phase1_run(scope_id=SCOPE, session_id="s1", generator=generator) is None
    now = timezone.now()
    assert eligible_sessions(scope_id=SCOPE, now=now, config=pipeline_config(), ignore_idle=True) == []
    assert len(generator.calls) == 1


@pytest.mark.django_db
def test_three_provider_wide_failures_on_one_watermark_exhaust_the_job_until_a_newer_source_resets_the_budget() -> (
    None
):
    # A provider-wide code says nothing about the sources: no isolation, nothing set aside.
    capture(SCOPE, "a", "remember: one")
    failing = StubGenerator(PROVIDER_DOWN)
    start = timezone.now()
    for attempt in range(3):
        with time_machine.travel(start + timedelta(hours=attempt)):
            committed = runner.phase1_run(scope_id=SCOPE, session_id="s1", generator=failing)
            assert committed is not None
            if attempt < 2:
                assert committed.outcome == "failed" and job().backoff_until > timezone.now()
                # Backing off: not claimable until it passes.
                assert runner.phase1_run(scope_id=SCOPE, session_id="s1", generator=failing) is None
    row = job()
    assert row.status == "exhausted" and row.retries_left == 0 and row.error_code == "provider_error"
    assert not row.isolating and not PipelineSetAside.objects.exists()
    with time_machine.travel(start + timedelta(days=1)):
        assert runner.phase1_run(scope_id=SCOPE, session_id="s1", generator=failing) is None
        capture(SCOPE, "b", "remember: two")
        ok = runner.phase1_run(scope_id=SCOPE, session_id="s1", generator=StubGenerator(NO_OUTPUT))
    assert ok is not None and ok.outcome == "no_output"
    row = job()
    assert row.status == "done" and row.retries_left == 3 and row.last_success_watermark == 2
    assert len(failing.calls) == 3


@pytest.mark.django_db
def test_a_schema_invalid_answer_is_its_own_outcome_and_spends_a_retry() -> None:
    capture(SCOPE, "a", "remember: one")
    broken = StubGenerator(GeneratorResult(outcome="output", memories=(memory("", "a"),)))

    committed = runner.phase1_run(scope_id=SCOPE, session_id="s1", generator=broken)

    assert committed is not None and committed.outcome == "failed"
    assert (
        job().outcome == "schema_invalid" and job().error_code == "schema_invalid" and job().retries_left == 2
    )


@pytest.mark.django_db
def test_a_generator_that_raises_is_a_failed_attempt() -> None:
    capture(SCOPE, "a", "remember: one")

    def boom(projection: Any) -> GeneratorResult:
        raise ValueError("provider exploded with secret AKIAIOSFODNN7EXAMPLE")

    committed = runner.phase1_run(scope_id=SCOPE, session_id="s1", generator=StubGenerator(boom))

    assert committed is not None and committed.outcome == "failed"
    assert job().error_code == "generator_exception"


@pytest.mark.django_db
def test_the_generator_sees_redacted_sources_and_items_citing_foreign_sources_are_dropped() -> None:
    capture(SCOPE, "a", "remember: key AKIAIOSFODNN7EXAMPLE")
    capture(SCOPE, "elsewhere", "unrelated", session="s2")
    generator = StubGenerator(
        output(
            memory("kept AKIAIOSFODNN7EXAMPLE", "a"), memory("dropped", "elsewhere"), memory("gone", "zzz")
        )
    )

    runner.phase1_run(scope_id=SCOPE, session_id="s1", generator=generator)

    assert generator.calls[0].sources[0].content == "remember: key [REDACTED:aws_access_key]"
    saved = PipelineOutput.objects.get(scope_id=SCOPE, session_id="s1")
    assert saved.memories == [{"kind": "note", "text": "kept [REDACTED:aws_access_key]", "evidence": ["a"]}]


@pytest.mark.django_db
def test_eligibility_waits_for_idle_skips_old_and_polluted_sessions() -> None:
    config = pipeline_config()
    start = timezone.now()
    with time_machine.travel(start - timedelta(days=40)):
        capture(SCOPE, "old", "remember: ancient", session="old")
    with time_machine.travel(start):
        capture(SCOPE, "a", "remember: one", session="fresh")
        capture(SCOPE, "b", "remember: two", session="dirty", external_context=True)
    assert eligible_sessions(scope_id=SCOPE, now=start + timedelta(minutes=5), config=config) == []
    later = start + timedelta(minutes=31)
    assert [s.session_id for s in eligible_sessions(scope_id=SCOPE, now=later, config=config)] == ["fresh"]
    assert phase1_claim(scope_id=SCOPE, session_id="dirty", worker_id="w", now=later, config=config) is None


@pytest.mark.django_db
def test_two_workers_claiming_one_session_in_turn_only_the_first_runs() -> None:
    capture(SCOPE, "a", "remember: one")

    results = [claim("w1"), claim("w2")]

    assert sum(r is not None for r in results) == 1


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_two_workers_claiming_one_session_at_once_exactly_one_runs() -> None:
    assert connection.vendor == "postgresql"
    for round_ in range(5):
        session = f"race-{round_}"
        capture(SCOPE, f"src-{round_}", "remember: one", session=session)
        barrier = threading.Barrier(2)
        results: list[Any] = [None, None]

        def work(
            index: int,
            session: str = session,
            barrier: threading.Barrier = barrier,
            results: list[Any] = results,
        ) -> None:
            try:
                barrier.wait(timeout=30)
                results[index] = phase1_claim(
                    scope_id=SCOPE,
                    session_id=session,
                    worker_id=f"w{index}",
                    now=timezone.now(),
                    config=pipeline_config(),
                )
            except BaseException as exc:
                results[index] = exc
            finally:
                connections.close_all()

        threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not any(isinstance(r, BaseException) for r in results), results
        assert sum(r is not None for r in results) == 1
        assert PipelineJob.objects.filter(scope_id=SCOPE, session_id=session).count() == 1


@pytest.mark.django_db
def test_a_worker_killed_on_a_poisoned_source_spends_a_retry_each_lease_and_the_source_is_set_aside() -> None:
    # The worker dies (timeout kill) between claim and commit: nothing records a failure, so the
    # expired lease itself must count as a spent attempt or the job loops forever. After the
    # third, the lone source is set aside and the session's next claim leaves it out.
    capture(SCOPE, "a", "remember: one")
    start = timezone.now()
    claims = []
    for hour in range(1, 5):
        with time_machine.travel(start + timedelta(hours=hour)):
            claims.append(claim(f"w{hour}"))
    assert all(c is not None for c in claims)
    last = claims[-1]
    assert last is not None
    aside = PipelineSetAside.objects.get(scope_id=SCOPE)
    assert (aside.source_id, aside.session_id, aside.reason) == ("a", "s1", "lease_expired")
    row = job()
    assert row.status == "running" and row.isolating and row.isolate_reason == "lease_expired"
    assert row.ownership_token == last.token
    with time_machine.travel(start + timedelta(hours=4, minutes=1)):
        done = commit(last, NO_OUTPUT)
    assert done.outcome == "no_output" and not job().isolating and job().last_success_watermark == 1
    with time_machine.travel(start + timedelta(days=2)):
        capture(SCOPE, "b", "remember: two")
        generator = StubGenerator(NO_OUTPUT)
        assert runner.phase1_run(scope_id=SCOPE, session_id="s1", generator=generator) is not None
    assert [s.source_id for s in generator.calls[0].sources] == ["b"]
    assert job().retries_left == 3


@pytest.mark.django_db
def test_a_projection_that_raises_is_a_failed_attempt_not_a_crash(monkeypatch: Any) -> None:
    capture(SCOPE, "a", "remember: one")

    def poisoned(text: str) -> str:
        raise RecursionError("a detector gave up")

    monkeypatch.setattr(runner, "redact_text", poisoned)
    generator = StubGenerator(output(memory("fact", "a")))
    committed = runner.phase1_run(scope_id=SCOPE, session_id="s1", generator=generator)

    assert committed is not None and committed.outcome == "failed"
    assert job().error_code == "projection_exception" and job().retries_left == 2
    assert generator.calls == []
