"""End to end through HTTP with the ``rules`` generator: capture, run the pipeline, recall."""

from __future__ import annotations

import io
import json
import logging
from typing import Any

import pytest
from django.core.management import call_command

from powercontext.core.models import ArtifactRevision, MemoryEntryVersion
from powercontext.pipeline.materialize import opaque_source_ref
from powercontext.pipeline.models import PipelineOutput
from review.models import Candidate, CandidateVersion
from tests.pipeline.helpers import AWS_KEY

SCOPE = "pipeline-end-to-end"  # not a hex string: request ids in the log are hex

TASK_OUTCOME = {
    "schema": "powercontext.task-outcome.v1",
    "trust": "untrusted_observation",
    "objective": "make the nightly integration build green again",
    "status": "succeeded",
    "summary": "pinned the dependency resolver and reran the build",
    "observations": [
        {"text": "the resolver upgrade changed transitive versions", "basis": "verified", "evidence": []}
    ],
    "checks": [
        {"name": "unit tests", "status": "passed", "basis": "verified", "evidence": []},
        {"name": "lint", "status": "skipped", "basis": "declared", "evidence": []},
    ],
    "produced_artifacts": [],
    "remaining_work": [],
}


def capture(api: Any, source_id: str, content: str, metadata: dict[str, Any]) -> None:
    response = api.post(
        "/v1/sources/content",
        {"scope_id": SCOPE, "source_id": source_id, "content": content, "metadata": metadata},
    )
    assert response.status_code == 202, response.content


def captured_session(api: Any) -> None:
    session = {"session_id": "sess-1", "origin": "claude-code", "event": "UserPromptSubmit"}
    capture(api, "p1", "remember: the staging database runs on port 6543\nplease fix the build", session)
    capture(api, "p2", f"note: deploy key for CI is {AWS_KEY}\nalways run make lint before pushing", session)
    capture(api, "t1", json.dumps(TASK_OUTCOME), {"session_id": "task-1", "kind": "task-outcome"})


def everything_stored() -> str:
    rows = [
        *MemoryEntryVersion.objects.values_list("text", "kind"),
        *CandidateVersion.objects.values_list("proposal", "reason"),
        *PipelineOutput.objects.values_list("memories", "experiences"),
        *ArtifactRevision.objects.values_list("content", flat=True),
    ]
    return json.dumps(rows, default=str)


def check_recall(api: Any) -> None:
    hits = api.search(SCOPE, "staging database port")["hits"]
    assert [h["text"] for h in hits][:1] == ["the staging database runs on port 6543"]
    got = api.post("/v1/memory/entries/get", {"scope_id": SCOPE, "citation": hits[0]["citation"]})
    assert got.status_code == 200
    # Memory cites its evidence by an opaque reference: a source id may carry its session id.
    assert got.json()["source_refs"] == [{"name": "content", "source_id": opaque_source_ref(SCOPE, "p1")}]
    lint = api.search(SCOPE, "lint before pushing")["hits"][0]
    assert lint["text"] == "always run make lint before pushing"
    deploy = api.search(SCOPE, "deploy key")["hits"][0]
    assert deploy["text"] == "deploy key for CI is [REDACTED:aws_access_key]"

    listed = api.post(
        "/v1/artifact-candidates/list", {"scope_id": SCOPE, "status": "pending", "family": "experience"}
    )
    assert listed.status_code == 200, listed.content
    candidates = listed.json()["candidates"]
    assert len(candidates) == 1 and candidates[0]["status"] == "pending"
    full = api.post(
        "/v1/artifact-candidates/get", {"scope_id": SCOPE, "candidate_id": candidates[0]["candidate_id"]}
    ).json()
    assert full["source_refs"] == [{"name": "content", "source_id": "t1"}]
    assert full["proposal"]["situation"] == TASK_OUTCOME["objective"]
    assert "Check lint: skipped (declared, not verified)" in full["proposal"]["outcome"]


@pytest.mark.django_db
def test_run_pipeline_turns_captured_work_into_cited_memory_and_one_pending_experience(
    api: Any, caplog: Any
) -> None:
    captured_session(api)
    caplog.set_level(logging.DEBUG)
    out = io.StringIO()

    call_command("run_pipeline", "--ignore-idle", "--no-progress", stdout=out)

    summary = json.loads(out.getvalue())
    assert summary["sessions"] == {"output": 2} and summary["remembered"] == 3 and summary["proposed"] == 1
    check_recall(api)
    assert Candidate.objects.filter(scope_id=SCOPE).count() == 1
    assert AWS_KEY not in everything_stored()
    assert AWS_KEY not in caplog.text and SCOPE not in caplog.text and "port 6543" not in caplog.text


@pytest.mark.django_db
def test_run_pipeline_without_ignore_idle_explains_why_fresh_sessions_wait(api: Any) -> None:
    captured_session(api)
    out, err = io.StringIO(), io.StringIO()

    call_command("run_pipeline", "--no-progress", stdout=out, stderr=err)

    assert json.loads(out.getvalue())["sessions"] == {}
    hint = err.getvalue()
    assert "2 session(s) have sources waiting but are not idle yet" in hint
    assert "POWERCONTEXT_PIPELINE_IDLE_SECONDS" in hint and "--ignore-idle" in hint
    assert PipelineOutput.objects.count() == 0


@pytest.mark.django_db
def test_run_pipeline_with_nothing_pending_says_so() -> None:
    err = io.StringIO()

    call_command("run_pipeline", "--no-progress", stdout=io.StringIO(), stderr=err)

    assert "no session has sources waiting to be extracted" in err.getvalue()


@pytest.mark.django_db
def test_run_pipeline_that_took_sessions_prints_no_hint(api: Any) -> None:
    captured_session(api)
    err = io.StringIO()

    call_command("run_pipeline", "--ignore-idle", "--no-progress", stdout=io.StringIO(), stderr=err)

    assert "idle" not in err.getvalue() and "waiting" not in err.getvalue()


@pytest.mark.django_db
def test_flush_runs_one_bounded_pass_for_one_scope(api: Any, caplog: Any) -> None:
    caplog.set_level(logging.DEBUG)
    captured_session(api)

    response = api.post("/v1/memory/flush", {"scope_id": SCOPE})

    assert response.status_code == 200, response.content
    body = response.json()
    revision = body["memory"]["revision"]
    assert body == {
        "status": "processed",
        "previous_cursor": 0,
        "current_cursor": 3,
        "high_watermark": 3,
        "processed_source_count": 3,
        "memory": {"family": "memory", "artifact_id": "memory", "revision": revision},
    }
    check_recall(api)
    assert AWS_KEY not in everything_stored() and AWS_KEY not in caplog.text

    again = api.post("/v1/memory/flush", {"scope_id": SCOPE}).json()
    assert again["status"] == "idle" and again["previous_cursor"] == again["current_cursor"] == 3
    assert again["processed_source_count"] == 0 and again["memory"]["revision"] == revision


@pytest.mark.django_db
def test_flush_of_an_empty_scope_is_idle(api: Any) -> None:
    body = api.post("/v1/memory/flush", {"scope_id": "nothing-here"}).json()

    assert body == {
        "status": "idle",
        "previous_cursor": 0,
        "current_cursor": 0,
        "high_watermark": 0,
        "processed_source_count": 0,
        "memory": None,
    }


@pytest.mark.django_db
def test_flush_validates_and_refuses_when_the_pipeline_is_off(api: Any, settings: Any) -> None:
    assert api.post("/v1/memory/flush", {"scope_id": " "}).status_code == 422
    assert api.post("/v1/memory/flush", {"scope_id": "s", "extra": 1}).status_code == 422
    settings.POWERCONTEXT_GENERATOR = "off"

    response = api.post("/v1/memory/flush", {"scope_id": "s"})

    assert response.status_code == 422
    assert response.json()["error"]["code"] == "capability_not_supported"
