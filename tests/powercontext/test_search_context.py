"""The prepare read: Memory and approved-Experience candidates in one statement."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from powercontext import search
from powercontext.core.hits import ArtifactRef
from powercontext.memory.sources import source_capture
from review import services as review
from tests.powercontext.factories import make_memory


def approve_experience(scope: str, lesson: str, family: str = "experience") -> review.Candidate:
    reviewer = get_user_model().objects.get_or_create(username="search-reviewer")[0]
    source_capture(scope_id=scope, source_id="evidence", content="evidence text", metadata=None)
    proposal = (
        {"situation": "deploying", "action": "migrate first", "outcome": "fine", "lesson": lesson}
        if family == "experience"
        else {
            "name": "deploy",
            "description": "deploy skill",
            "instructions": lesson,
            "validation": ["check"],
        }
    )
    submission = review.Submission(proposal, [{"name": "content", "source_id": "evidence"}], [], None, None)
    candidate = review.candidate_propose(scope_id=scope, family=family, submission=submission)
    return review.candidate_approve(
        scope_id=scope, candidate_id=candidate.candidate_id, expected_version=1, reviewer=reviewer
    )


@pytest.mark.django_db
def test_both_sources_come_back_ranked_with_their_own_limits() -> None:
    for i in range(20):
        make_memory("ctx", f"deploy note {i}")
    for i in range(10):
        approve_experience("ctx", f"deploy lesson {i}")

    memory, experience = search.search_context("ctx", "deploy", memory_limit=16, experience_limit=8)

    assert len(memory) == 16 and len(experience) == 8
    assert {hit.memory_ref for hit in memory} == {ArtifactRef("memory", "memory", 20)}
    assert all(
        hit.artifact_ref.family == "experience" and hit.artifact_ref.revision == 1 for hit in experience
    )
    assert [r.score for r in memory] == sorted((r.score for r in memory), reverse=True)
    assert [r.score for r in experience] == sorted((r.score for r in experience), reverse=True)
    assert all(hit.content.lesson.startswith("deploy lesson") for hit in experience)


@pytest.mark.django_db
def test_skills_pending_candidates_and_other_scopes_are_never_candidates() -> None:
    approve_experience("ctx", "skills never appear", family="skill")
    approve_experience("other", "deploy lesson elsewhere")
    source_capture(scope_id="ctx", source_id="evidence", content="evidence text", metadata=None)
    review.candidate_propose(
        scope_id="ctx",
        family="experience",
        submission=review.Submission(
            {"situation": "deploy", "action": "deploy", "outcome": "deploy", "lesson": "deploy pending"},
            [{"name": "content", "source_id": "evidence"}],
            [],
            None,
            None,
        ),
    )
    memory, experience = search.search_context(
        "ctx", "deploy skills never appear", memory_limit=16, experience_limit=8
    )
    assert memory == [] and experience == []


@pytest.mark.django_db
def test_a_query_without_terms_reads_nothing() -> None:
    make_memory("ctx", "anything")
    assert search.search_context("ctx", "?!  …", memory_limit=16, experience_limit=8) == ([], [])
