"""Phase 2: forgetting (no-op and pollution), idempotency, duplicates, the singleton lease."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.utils import timezone

from powercontext.core.models import ArtifactRevision
from powercontext.memory.selectors import memory_head_revision, memory_list_entries
from powercontext.pipeline import runner
from powercontext.pipeline.config import pipeline_config
from powercontext.pipeline.materialize import phase2_claim, phase2_materialize
from powercontext.pipeline.models import PipelineCounter, PipelineOutput, PipelineSelection
from powercontext.pipeline.selectors import pipeline_counters
from powercontext.prepare.application import PrepareRequest, ScopedContextApplication
from review.models import Candidate
from tests.pipeline.helpers import NO_OUTPUT, StubGenerator, capture, experience, memory, output, run_pass
from tests.review.factories import experience_proposal, make_approved

SCOPE = "p2"


def active_texts() -> list[str]:
    return sorted(e.text for e in memory_list_entries(scope_id=SCOPE)[1])


def prepared(query: str) -> str:
    return (
        ScopedContextApplication()
        .prepare(PrepareRequest(scope_id=SCOPE, query=query, max_bytes=8192))
        .content
        or ""
    )


@pytest.mark.django_db
def test_a_session_that_now_produces_nothing_has_its_memories_retired_but_citations_still_resolve(
    api: Any,
) -> None:
    capture(SCOPE, "a", "remember: the cache lives in redis db 3")
    run_pass(SCOPE, StubGenerator(output(memory("the cache lives in redis db 3", "a"))))
    hit = api.search(SCOPE, "cache redis")["hits"][0]
    assert "redis db 3" in prepared("cache redis")

    capture(SCOPE, "b", "never mind")  # a newer watermark; the generator now answers no-op
    report = run_pass(SCOPE, StubGenerator(NO_OUTPUT))

    assert report.outcomes == {"no_output": 1}
    assert active_texts() == [] and not PipelineOutput.objects.exists()
    assert "redis db 3" not in prepared("cache redis")
    assert api.search(SCOPE, "cache redis")["hits"] == []
    old = api.post("/v1/memory/entries/get", {"scope_id": SCOPE, "citation": hit["citation"]})
    assert old.status_code == 200 and old.json()["text"] == "the cache lives in redis db 3"
    counters = pipeline_counters(scope_id=SCOPE)
    assert counters["no_output_deleting"] == 1 and counters["forgotten"] == 1


@pytest.mark.django_db
def test_a_first_no_output_deletes_nothing_and_requests_no_phase2() -> None:
    capture(SCOPE, "a", "just chatting")

    report = run_pass(SCOPE, StubGenerator(NO_OUTPUT))

    assert report.outcomes == {"no_output": 1} and report.phase2 == {}
    assert pipeline_counters(scope_id=SCOPE)["no_output_first"] == 1
    assert memory_head_revision(scope_id=SCOPE) is None


@pytest.mark.django_db
def test_a_session_polluted_after_materialization_is_forgotten_and_its_candidate_rejected() -> None:
    capture(SCOPE, "a", "remember: deploys happen on tuesday")
    capture(SCOPE, "t", "task", kind="task-outcome")
    generator = StubGenerator(
        output(memory("deploys happen on tuesday", "a"), experiences=(experience("pin resolvers", "t"),))
    )
    run_pass(SCOPE, generator)
    assert active_texts() == ["deploys happen on tuesday"]
    candidate = Candidate.objects.get(scope_id=SCOPE)
    assert candidate.status == "pending"
    assert candidate.latest.source_refs == [{"name": "content", "source_id": "t"}]

    capture(SCOPE, "x", "pasted web page", external_context=True)
    run_pass(SCOPE, generator)

    assert active_texts() == [] and not PipelineOutput.objects.exists()
    candidate.refresh_from_db()
    assert candidate.status == "rejected" and "forgotten" in candidate.decision_reason
    assert candidate.decision.reviewer.username == "powercontext-pipeline"
    assert len(generator.calls) == 1  # the polluted session was never extracted again


@pytest.mark.django_db
def test_a_polluted_session_is_never_extracted() -> None:
    capture(SCOPE, "a", "remember: x", origin="web-fetch")
    generator = StubGenerator(output(memory("x", "a")))

    run_pass(SCOPE, generator)
    assert len(generator.calls) == 1  # origin not listed: a normal session

    capture(SCOPE, "b", "remember: y", session="s2", external_context=True)
    run_pass(SCOPE, generator)
    assert len(generator.calls) == 1


@pytest.mark.django_db
def test_an_origin_listed_in_settings_pollutes_the_session(settings: Any) -> None:
    settings.POWERCONTEXT_PIPELINE = {**settings.POWERCONTEXT_PIPELINE, "polluted_origins": ["web-fetch"]}
    capture(SCOPE, "a", "remember: x", origin="web-fetch")
    generator = StubGenerator(output(memory("x", "a")))

    run_pass(SCOPE, generator)

    assert generator.calls == []


@pytest.mark.django_db
def test_running_the_pipeline_twice_over_the_same_input_writes_nothing_the_second_time() -> None:
    capture(SCOPE, "a", "remember: one fact")
    capture(SCOPE, "t", "task", kind="task-outcome")
    generator = StubGenerator(
        output(memory("one fact", "a"), experiences=(experience("always pin resolvers", "t"),))
    )
    run_pass(SCOPE, generator)
    revisions = ArtifactRevision.objects.count()
    selection = list(PipelineSelection.objects.values_list("pk", flat=True))

    report = run_pass(SCOPE, generator)
    # Even a forced re-extraction of the same session and a second Phase 2 change nothing.
    with time_machine.travel(timezone.now() + timedelta(hours=2)):
        capture(SCOPE, "c", "more talk")
        run_pass(SCOPE, generator)

    assert report.outcomes == {} and not report.changed
    assert ArtifactRevision.objects.count() == revisions
    assert Candidate.objects.filter(scope_id=SCOPE).count() == 1
    assert list(PipelineSelection.objects.values_list("pk", flat=True)) == selection


@pytest.mark.django_db
def test_an_experience_close_to_an_approved_or_pending_one_is_not_proposed_again() -> None:
    approved = experience_proposal()
    make_approved(SCOPE, "experience", proposal=approved)
    capture(SCOPE, "t", "task", kind="task-outcome")
    capture(SCOPE, "u", "task", kind="task-outcome", session="s2")
    same = experience("x", "t")
    same = type(same)(**{**approved, "evidence": ("t",)})
    fresh = experience("a completely different lesson about flaky sockets", "u")
    run_pass(
        SCOPE, StubGenerator(lambda p: output(experiences=(same,) if p.session_id == "s1" else (fresh,)))
    )
    assert Candidate.objects.filter(scope_id=SCOPE, status="pending").count() == 1

    capture(SCOPE, "v", "task", kind="task-outcome", session="s3")
    near = type(fresh)(**{**fresh.__dict__, "evidence": ("v",), "action": fresh.action + " again"})
    run_pass(SCOPE, StubGenerator(output(experiences=(near,))))

    assert Candidate.objects.filter(scope_id=SCOPE, status="pending").count() == 1
    assert pipeline_counters(scope_id=SCOPE)["duplicate_skipped"] == 2
    assert Candidate.objects.filter(scope_id=SCOPE, status="approved").count() == 1  # never approves


@pytest.mark.django_db
def test_phase2_is_a_singleton_with_a_cooldown_and_a_fenced_commit() -> None:
    config = pipeline_config()
    capture(SCOPE, "a", "remember: one")
    run_pass(SCOPE, StubGenerator(output(memory("one", "a"))))
    now = timezone.now()

    assert phase2_claim(scope_id=SCOPE, worker_id="w", now=now, config=config) is None  # cooldown
    first = phase2_claim(scope_id=SCOPE, worker_id="w1", now=now, config=config, force=True)
    assert first is not None
    assert phase2_claim(scope_id=SCOPE, worker_id="w2", now=now, config=config, force=True) is None
    later = now + config.lease + timedelta(seconds=1)
    second = phase2_claim(scope_id=SCOPE, worker_id="w2", now=later, config=config, force=True)
    assert second is not None
    assert phase2_materialize(claim=first, now=later, config=config).lost is True
    assert phase2_materialize(claim=second, now=later, config=config).lost is False


@pytest.mark.django_db
def test_counters_are_kept_per_scope_and_outcome() -> None:
    capture(SCOPE, "a", "remember: one")
    run_pass(SCOPE, StubGenerator(output(memory("one", "a"))))

    counters = dict(PipelineCounter.objects.filter(scope_id=SCOPE).values_list("name", "value"))

    assert counters == {"claimed": 1, "output": 1}
    assert runner.scan(scope_id=SCOPE).phase1 == []


def _remember_in_a_session() -> None:
    capture(SCOPE, "a", "remember: the cache lives in redis db 3", session="s1")
    run_pass(SCOPE, StubGenerator(output(memory("the cache lives in redis db 3", "a"))))


def _report_use(now: Any) -> None:
    from powercontext.feedback.services import FeedbackItem, feedback_record

    revision, entries = memory_list_entries(scope_id=SCOPE)
    (entry,) = [e for e in entries if e.text == "the cache lives in redis db 3"]
    citation = {
        "memory_ref": {"family": "memory", "artifact_id": "memory", "revision": revision},
        "entry_id": entry.entry_id,
        "entry_version_id": entry.entry_version_id,
    }
    feedback_record(scope_id=SCOPE, items=[FeedbackItem(citation, "used")], token=None, now=now)


@pytest.mark.django_db
@pytest.mark.parametrize("used", [True, False])
def test_a_pipeline_memory_agents_keep_using_outlives_the_retention(used: bool) -> None:
    start = timezone.now()
    retention = pipeline_config().retention
    with time_machine.travel(start, tick=False):
        _remember_in_a_session()
    if used:
        _report_use(start + retention - timedelta(days=10))
    later = start + retention + timedelta(days=10)
    with time_machine.travel(later, tick=False):
        # another session's output makes Phase 2 run again, past the first one's retention
        capture(SCOPE, "b", "remember: deploys happen on tuesday", session="s2")
        run_pass(SCOPE, StubGenerator(output(memory("deploys happen on tuesday", "b"))))

    expected = (
        ["deploys happen on tuesday", "the cache lives in redis db 3"]
        if used
        else ["deploys happen on tuesday"]
    )
    assert active_texts() == expected
