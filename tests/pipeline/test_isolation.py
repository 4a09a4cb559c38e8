"""Per-source failure isolation: a source that no attempt survives is set aside, and the rest of
its session -- older and newer sources -- still becomes Memory."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.urls import reverse
from django.utils import timezone

from powercontext.memory.selectors import memory_list_entries
from powercontext.pipeline.generation import GeneratorResult, Projection
from powercontext.pipeline.models import PipelineJob, PipelineOutput, PipelineSetAside
from powercontext.pipeline.selectors import pipeline_counters
from tests.pipeline.helpers import PROVIDER_DOWN, StubGenerator, capture, memory, output, run_pass

SCOPE = "iso"
POISON = "POISON"


class WorkerKilled(BaseException):
    """Stands for the worker being killed mid-generation: nothing in the runner catches it, so
    the job is left running until its lease lapses, as after a real time-limit kill."""


def remembered(projection: Projection) -> GeneratorResult:
    """One memory per ``remember:`` source it sees, citing that source."""
    items = [
        memory(s.content.removeprefix("remember: "), s.source_id)
        for s in projection.sources
        if s.content.startswith("remember: ")
    ]
    return output(*items) if items else GeneratorResult(outcome="no_output")


def raising_on_poison(projection: Projection) -> GeneratorResult:
    if any(POISON in s.content for s in projection.sources):
        raise ValueError("the provider chokes on this source")
    return remembered(projection)


def killing_on_poison(projection: Projection) -> GeneratorResult:
    if any(POISON in s.content for s in projection.sources):
        raise WorkerKilled
    return remembered(projection)


def active_texts() -> list[str]:
    return sorted(e.text for e in memory_list_entries(scope_id=SCOPE)[1])


def saw_poison(generator: StubGenerator) -> int:
    return sum(any(POISON in s.content for s in call.sources) for call in generator.calls)


def job() -> PipelineJob:
    return PipelineJob.objects.get(scope_id=SCOPE, session_id="s1")


def passes_until_settled(generator: StubGenerator, start: datetime, hours: range) -> list[str]:
    """One pass per hour (past every backoff and lease); the outcomes, a killed worker as ``killed``."""
    outcomes = []
    for hour in hours:
        with time_machine.travel(start + timedelta(hours=hour)):
            try:
                report = run_pass(SCOPE, generator)
            except WorkerKilled:
                outcomes.append("killed")
            else:
                outcomes.extend(sorted(report.outcomes.elements()))
    return outcomes


@pytest.mark.django_db
def test_a_source_that_makes_the_generator_raise_is_set_aside_and_the_rest_of_its_session_becomes_memory() -> (
    None
):
    start = timezone.now()
    with time_machine.travel(start):
        capture(SCOPE, "good-1", "remember: the build uses uv")
        capture(SCOPE, "poison", f"remember: {POISON}")
        capture(SCOPE, "good-2", "remember: tests run on two databases")
    generator = StubGenerator(raising_on_poison)

    outcomes = passes_until_settled(generator, start, range(1, 4))

    # Two failed attempts back off; the third would exhaust the session, and isolates instead.
    assert outcomes == ["failed", "failed", "output"]
    aside = PipelineSetAside.objects.get(scope_id=SCOPE)
    assert (aside.source_id, aside.session_id, aside.reason) == ("poison", "s1", "generator_exception")
    assert active_texts() == ["tests run on two databases", "the build uses uv"]
    row = job()
    assert row.status == "done" and not row.isolating and row.last_success_watermark == 3
    assert pipeline_counters(scope_id=SCOPE)["set_aside"] == 1
    assert pipeline_counters(scope_id=SCOPE)["exhausted"] == 0
    poisoned_calls = saw_poison(generator)

    with time_machine.travel(start + timedelta(hours=5)):
        capture(SCOPE, "good-3", "remember: a later prompt of the same session")
    outcomes = passes_until_settled(generator, start, range(6, 9))

    assert outcomes == ["output"]  # one pass took the new source; later passes had nothing to do
    assert saw_poison(generator) == poisoned_calls  # never retried
    assert active_texts() == [
        "a later prompt of the same session",
        "tests run on two databases",
        "the build uses uv",
    ]
    assert PipelineSetAside.objects.count() == 1
    saved = PipelineOutput.objects.get(scope_id=SCOPE, session_id="s1")
    assert all(m["evidence"] != ["poison"] for m in saved.memories)


@pytest.mark.django_db
def test_a_source_that_kills_every_worker_is_set_aside_and_a_later_source_costs_no_kill() -> None:
    start = timezone.now()
    with time_machine.travel(start):
        capture(SCOPE, "good-1", "remember: the build uses uv")
        capture(SCOPE, "poison", f"huge {POISON}")
        capture(SCOPE, "good-2", "remember: tests run on two databases")
    generator = StubGenerator(killing_on_poison)

    outcomes = passes_until_settled(generator, start, range(1, 7))

    # Three whole-session attempts die, then the bisection: the prefix up to good-1 passes, the
    # one up to the poison dies, which corners it; the session without it commits.
    assert outcomes == ["killed", "killed", "killed", "killed", "output"]
    aside = PipelineSetAside.objects.get(scope_id=SCOPE)
    assert (aside.source_id, aside.reason) == ("poison", "lease_expired")
    assert active_texts() == ["tests run on two databases", "the build uses uv"]
    assert job().status == "done" and job().lease_until is None

    with time_machine.travel(start + timedelta(hours=7)):
        capture(SCOPE, "good-3", "remember: a later prompt of the same session")
    outcomes = passes_until_settled(generator, start, range(8, 10))

    assert outcomes == ["output"]
    assert saw_poison(generator) == 4
    assert "a later prompt of the same session" in active_texts()


@pytest.mark.django_db
def test_bisection_sets_aside_every_failing_source_and_keeps_the_good_ones() -> None:
    start = timezone.now()
    with time_machine.travel(start):
        for index in range(8):
            text = POISON if index in (2, 6) else f"fact {index}"
            capture(SCOPE, f"src-{index}", f"remember: {text}")
    generator = StubGenerator(raising_on_poison)

    passes_until_settled(generator, start, range(1, 5))

    assert sorted(PipelineSetAside.objects.values_list("source_id", flat=True)) == ["src-2", "src-6"]
    assert active_texts() == [f"fact {i}" for i in (0, 1, 3, 4, 5, 7)]
    # Three whole-session failures, then about log2(8) probes per poisoned source plus a final run.
    assert len(generator.calls) <= 3 + 2 * 4 + 2


@pytest.mark.django_db
def test_a_provider_wide_failure_during_isolation_sets_nothing_aside_and_spends_retries() -> None:
    start = timezone.now()
    with time_machine.travel(start):
        capture(SCOPE, "good-1", "remember: one")
        capture(SCOPE, "poison", f"remember: {POISON}")
    passes_until_settled(StubGenerator(raising_on_poison), start, range(1, 3))  # two failures

    down = StubGenerator(PROVIDER_DOWN)
    with time_machine.travel(start + timedelta(hours=3)):
        # The third failure isolates (the provider still answered): the first probe then meets
        # an outage, which condemns nothing.
        generator = StubGenerator(lambda p: raising_on_poison(p) if len(p.sources) > 1 else down.generate(p))
        run_pass(SCOPE, generator)

    row = job()
    assert row.isolating and row.status == "failed" and row.error_code == "provider_error"
    assert row.retries_left == 2 and row.backoff_until is not None
    assert not PipelineSetAside.objects.exists()

    passes_until_settled(StubGenerator(raising_on_poison), start, range(4, 6))
    assert list(PipelineSetAside.objects.values_list("source_id", "reason")) == [
        ("poison", "generator_exception")
    ]
    assert active_texts() == ["one"]


@pytest.mark.django_db
def test_an_operator_sees_the_set_aside_source_and_its_reason_in_the_admin_view_only(
    admin_client: Any, settings: Any
) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    start = timezone.now()
    with time_machine.travel(start):
        capture(SCOPE, "good-1", "remember: the build uses uv")
        capture(SCOPE, "poison", f"remember: {POISON}")
    passes_until_settled(StubGenerator(raising_on_poison), start, range(1, 4))
    aside = PipelineSetAside.objects.get(scope_id=SCOPE)

    listing = admin_client.get(reverse("admin:pipeline_pipelinesetaside_changelist"))
    page = admin_client.get(reverse("admin:pipeline_pipelinesetaside_change", args=[aside.pk]))

    assert listing.status_code == 200 and page.status_code == 200
    for shown in (b"poison", b"generator_exception", b"s1"):
        assert shown in listing.content
    assert POISON.encode() not in listing.content + page.content  # ids and codes, never content
    assert admin_client.get(reverse("admin:pipeline_pipelinesetaside_add")).status_code == 403
    delete = reverse("admin:pipeline_pipelinesetaside_delete", args=[aside.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    assert PipelineSetAside.objects.filter(pk=aside.pk).exists()
