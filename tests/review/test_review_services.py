"""Review services: propose / revise / approve / reject, their rules, atomicity and races."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.forms.models import model_to_dict

from powercontext import search
from powercontext.core.exceptions import (
    ArtifactConflict,
    CandidateConflict,
    CandidateNotFound,
    CandidateTerminal,
    InvalidRequest,
)
from powercontext.core.models import Artifact, ArtifactRevision, ExperienceSearchDocument
from powercontext.prepare.experience import experience_search
from powercontext.search.fulltext import analyzer
from review import services
from review.models import Candidate, CandidateVersion, ReviewDecision
from tests.powercontext.factories import make_memory
from tests.powercontext.test_concurrency import run_together
from tests.review.factories import (
    experience_proposal,
    make_approved,
    make_candidate,
    make_reviewer,
    make_source,
    result_ref,
    skill_proposal,
    submission,
)

EXPERIENCE = Candidate.Family.EXPERIENCE
SKILL = Candidate.Family.SKILL


def approve(candidate: Candidate, *, version: int | None = None, reviewer: Any = None) -> Candidate:
    return services.candidate_approve(
        scope_id=candidate.scope_id,
        candidate_id=candidate.candidate_id,
        expected_version=candidate.version if version is None else version,
        reviewer=reviewer or make_reviewer(),
    )


def reject(candidate: Candidate, *, version: int | None = None, reason: str = "not reusable") -> Candidate:
    return services.candidate_reject(
        scope_id=candidate.scope_id,
        candidate_id=candidate.candidate_id,
        expected_version=candidate.version if version is None else version,
        reason=reason,
        reviewer=make_reviewer(),
    )


def revise(candidate: Candidate, *, version: int | None = None, **fields: Any) -> Candidate:
    return services.candidate_revise(
        scope_id=candidate.scope_id,
        candidate_id=candidate.candidate_id,
        expected_version=candidate.version if version is None else version,
        submission=submission(scope_id=candidate.scope_id, family=candidate.family, **fields),
        reviewer=make_reviewer(),
    )


def error_types(exc: InvalidRequest) -> list[str]:
    return [error["type"] for error in (exc.details or {})["errors"]]


def experience_text(proposal: dict[str, str]) -> str:
    return analyzer.searchable_text(proposal[name] for name in ("situation", "action", "outcome", "lesson"))


# --- lifecycle ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_propose_stores_a_pending_version_one_and_writes_no_artifact() -> None:
    candidate = make_candidate("repo", EXPERIENCE, reason="seen twice")

    assert (candidate.status, candidate.version, candidate.family) == ("pending", 1, "experience")
    assert candidate.candidate_id.startswith("cand_")
    assert (
        candidate.latest is not None
        and candidate.latest.version == 1
        and candidate.latest.reason == "seen twice"
    )
    assert (
        candidate.result_head is None
        and candidate.result_revision is None
        and candidate.decision_reason is None
    )
    assert not Artifact.objects.filter(family__in=["experience", "skill"]).exists()
    assert not ArtifactRevision.objects.exists()
    assert not ReviewDecision.objects.exists()


@pytest.mark.django_db
def test_revise_appends_the_next_version_and_leaves_the_old_version_row_unchanged() -> None:
    candidate = make_candidate("repo", EXPERIENCE)
    before = model_to_dict(CandidateVersion.objects.get(candidate=candidate, version=1))
    created_before = CandidateVersion.objects.get(candidate=candidate, version=1).created_at
    new_proposal = experience_proposal(lesson="a better lesson")

    revised = revise(candidate, proposal=new_proposal, reason="clearer lesson")

    assert (revised.status, revised.version) == ("pending", 2)
    assert revised.latest is not None and revised.latest.version == 2
    assert revised.latest.proposal == new_proposal and revised.latest.reason == "clearer lesson"
    old = CandidateVersion.objects.get(candidate=candidate, version=1)
    assert model_to_dict(old) == before and old.created_at == created_before
    assert CandidateVersion.objects.filter(candidate=candidate).count() == 2
    assert not ArtifactRevision.objects.exists()


@pytest.mark.django_db
def test_approve_writes_a_first_revision_moves_a_new_head_and_sets_searchable_text() -> None:
    proposal = experience_proposal()
    source = make_source("repo")
    candidate = make_candidate("repo", EXPERIENCE, proposal=proposal, source_refs=[source])
    reviewer = make_reviewer()

    approved = approve(candidate, reviewer=reviewer)

    assert approved.status == "approved" and approved.version == 1
    head = Artifact.objects.get(pk=approved.result_head_id)
    assert (head.family, head.current_revision, head.state) == ("experience", 1, "active")
    assert head.artifact_id.startswith("exp_")
    revision = ArtifactRevision.objects.get(head=head)
    assert (revision.revision, revision.parent_revision) == (1, None)
    assert revision.content == proposal and revision.source_refs == [source] and revision.artifact_refs == []
    assert revision.created_by == reviewer
    assert head.searchable_text == experience_text(proposal)
    assert head.analyzer_version == analyzer.ANALYZER_VERSION
    assert ExperienceSearchDocument.objects.filter(head=head).count() == 1
    decision = ReviewDecision.objects.get(candidate=candidate)
    assert (decision.decision, decision.version, decision.reviewer, decision.result_revision) == (
        "approved",
        1,
        reviewer,
        1,
    )


@pytest.mark.django_db
def test_searchable_text_holds_only_the_users_terms_and_no_rendering_labels() -> None:
    _, ref = make_approved("repo", EXPERIENCE, proposal=experience_proposal())
    text = Artifact.objects.get(artifact_id=ref["artifact_id"]).searchable_text

    assert text and "Situation:" not in text and "Lesson:" not in text
    assert not {"situation", "action", "outcome", "lesson"} & set(text.split())
    assert text == analyzer.normalize(text)


@pytest.mark.django_db
def test_approving_a_targeted_candidate_writes_the_next_revision_with_its_lineage() -> None:
    _, first = make_approved("repo", EXPERIENCE)
    second_proposal = experience_proposal(lesson="pin resolvers and cache wheels")
    candidate = make_candidate(
        "repo", EXPERIENCE, proposal=second_proposal, artifact_refs=[first], target=first
    )

    approved = approve(candidate)

    assert result_ref(approved) == {**first, "revision": 2}
    head = Artifact.objects.get(artifact_id=first["artifact_id"])
    assert head.current_revision == 2
    revisions = list(ArtifactRevision.objects.filter(head=head).order_by("revision"))
    assert [(r.revision, r.parent_revision) for r in revisions] == [(1, None), (2, 1)]
    assert revisions[1].content == second_proposal and revisions[1].artifact_refs == [first]
    assert head.searchable_text == experience_text(second_proposal)
    assert ExperienceSearchDocument.objects.filter(head=head).count() == 1


@pytest.mark.django_db
def test_approving_a_skill_writes_a_revision_but_no_searchable_text_or_index_row() -> None:
    proposal = skill_proposal()
    approved, ref = make_approved("repo", SKILL, proposal=proposal)

    head = Artifact.objects.get(pk=approved.result_head_id)
    assert (head.family, head.current_revision, head.searchable_text, head.analyzer_version) == (
        "skill",
        1,
        "",
        0,
    )
    assert head.artifact_id.startswith("skill_") and ref["family"] == "skill"
    assert ArtifactRevision.objects.get(head=head).content == proposal
    assert not ExperienceSearchDocument.objects.exists()


@pytest.mark.django_db
def test_reject_records_the_reason_and_writes_no_artifact() -> None:
    candidate = make_candidate("repo", EXPERIENCE)

    rejected = reject(candidate, reason="too specific to one machine")

    assert (rejected.status, rejected.version, rejected.decision_reason) == (
        "rejected",
        1,
        "too specific to one machine",
    )
    assert rejected.result_head is None and rejected.result_revision is None
    decision = ReviewDecision.objects.get(candidate=candidate)
    assert (decision.decision, decision.reason, decision.result_head) == (
        "rejected",
        "too specific to one machine",
        None,
    )
    assert not ArtifactRevision.objects.exists()
    assert not Artifact.objects.filter(family="experience").exists()


# --- terminal states and stale versions -----------------------------------------------------------

TERMINATE: dict[str, Callable[[Candidate], Candidate]] = {"approved": approve, "rejected": reject}
ACT: dict[str, Callable[[Candidate], Candidate]] = {"approve": approve, "reject": reject, "revise": revise}


@pytest.mark.django_db
@pytest.mark.parametrize("status", sorted(TERMINATE))
@pytest.mark.parametrize("action", sorted(ACT))
def test_a_terminal_candidate_refuses_every_further_action(status: str, action: str) -> None:
    candidate = TERMINATE[status](make_candidate("repo", EXPERIENCE))
    revisions = ArtifactRevision.objects.count()

    with pytest.raises(CandidateTerminal) as raised:
        ACT[action](candidate)

    assert raised.value.status == 409 and raised.value.code == "candidate_terminal"
    assert raised.value.details == {"status": status}
    candidate.refresh_from_db()
    assert (candidate.status, candidate.version) == (status, 1)
    assert ArtifactRevision.objects.count() == revisions
    assert ReviewDecision.objects.filter(candidate=candidate).count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("action", sorted(ACT))
def test_a_stale_expected_version_is_a_candidate_conflict(action: str) -> None:
    candidate = revise(make_candidate("repo", EXPERIENCE))
    assert candidate.version == 2

    with pytest.raises(CandidateConflict) as raised:
        _act_at(action, candidate, version=1)

    assert raised.value.code == "candidate_conflict"
    assert raised.value.details == {"expected_version": 1, "current_version": 2}
    candidate.refresh_from_db()
    assert (candidate.status, candidate.version) == ("pending", 2)
    assert not ArtifactRevision.objects.exists() and not ReviewDecision.objects.exists()


def _act_at(action: str, candidate: Candidate, *, version: int) -> Candidate:
    if action == "approve":
        return approve(candidate, version=version)
    if action == "reject":
        return reject(candidate, version=version)
    return revise(candidate, version=version)


@pytest.mark.django_db
def test_a_future_expected_version_is_also_a_conflict() -> None:
    candidate = make_candidate("repo", EXPERIENCE)
    with pytest.raises(CandidateConflict) as raised:
        approve(candidate, version=7)
    assert raised.value.details == {"expected_version": 7, "current_version": 1}


@pytest.mark.django_db
@pytest.mark.parametrize("action", sorted(ACT))
def test_an_unknown_candidate_is_not_found(action: str) -> None:
    ghost = Candidate(scope_id="repo", candidate_id="cand_missing", family=EXPERIENCE, version=1)
    with pytest.raises(CandidateNotFound) as raised:
        _act_at(action, ghost, version=1)
    assert raised.value.status == 404 and raised.value.code == "candidate_not_found"


@pytest.mark.django_db
def test_a_candidate_of_another_scope_is_not_found() -> None:
    candidate = make_candidate("repo", EXPERIENCE)
    elsewhere = Candidate(scope_id="Repo", candidate_id=candidate.candidate_id, family=EXPERIENCE, version=1)
    with pytest.raises(CandidateNotFound):
        approve(elsewhere)
    candidate.refresh_from_db()
    assert candidate.status == "pending"


# --- target rules ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_target_that_is_not_the_latest_revision_is_an_artifact_conflict_at_propose() -> None:
    _, first = make_approved("repo", EXPERIENCE)
    make_approved("repo", EXPERIENCE, artifact_refs=[first], target=first)
    candidates = Candidate.objects.count()

    with pytest.raises(ArtifactConflict) as raised:
        make_candidate("repo", EXPERIENCE, artifact_refs=[first], target=first)

    assert raised.value.code == "artifact_conflict"
    assert raised.value.details == {"current": {**first, "revision": 2}}
    assert Candidate.objects.count() == candidates


@pytest.mark.django_db
def test_a_target_that_moved_after_propose_is_an_artifact_conflict_at_approve() -> None:
    _, first = make_approved("repo", EXPERIENCE)
    slow = make_candidate("repo", EXPERIENCE, artifact_refs=[first], target=first)
    fast = make_candidate("repo", EXPERIENCE, artifact_refs=[first], target=first)
    approve(fast)

    with pytest.raises(ArtifactConflict) as raised:
        approve(slow)

    assert raised.value.details == {"current": {**first, "revision": 2}}
    slow.refresh_from_db()
    assert (slow.status, slow.version, slow.result_head_id) == ("pending", 1, None)
    assert ArtifactRevision.objects.filter(artifact_id=first["artifact_id"]).count() == 2


@pytest.mark.django_db
def test_a_target_must_be_listed_in_artifact_refs() -> None:
    _, first = make_approved("repo", EXPERIENCE)
    with pytest.raises(InvalidRequest) as raised:
        make_candidate("repo", EXPERIENCE, target=first)
    assert error_types(raised.value) == ["target_not_in_evidence"]


@pytest.mark.django_db
def test_a_target_must_be_of_the_candidates_family() -> None:
    _, skill = make_approved("repo", SKILL)
    with pytest.raises(InvalidRequest) as raised:
        make_candidate("repo", EXPERIENCE, artifact_refs=[skill], target=skill)
    assert error_types(raised.value) == ["target_family"]


@pytest.mark.django_db
def test_a_missing_target_artifact_is_invalid() -> None:
    ghost = {"family": "experience", "artifact_id": "exp_ghost", "revision": 1}
    with pytest.raises(InvalidRequest):
        make_candidate("repo", EXPERIENCE, source_refs=[make_source("repo")], target=ghost)
    with pytest.raises(InvalidRequest):
        make_candidate("repo", EXPERIENCE, artifact_refs=[ghost], target=ghost)
    assert not Candidate.objects.exists()


@pytest.mark.django_db
def test_a_memory_revision_cannot_be_a_target_but_is_valid_evidence() -> None:
    make_memory("repo", "the deploy script needs bash five")
    memory = {"family": "memory", "artifact_id": "memory", "revision": 1}

    with pytest.raises(InvalidRequest) as raised:
        make_candidate("repo", EXPERIENCE, artifact_refs=[memory], target=memory)
    assert error_types(raised.value) == ["target_family"]
    assert make_candidate("repo", EXPERIENCE, artifact_refs=[memory]).latest.artifact_refs == [memory]


# --- evidence rules ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_candidate_without_evidence_is_invalid() -> None:
    with pytest.raises(InvalidRequest) as raised:
        make_candidate("repo", EXPERIENCE, source_refs=[], artifact_refs=[])
    assert error_types(raised.value) == ["evidence_count"]


@pytest.mark.django_db
def test_thirty_two_references_are_accepted_and_thirty_three_combined_are_invalid() -> None:
    sources = [make_source("repo") for _ in range(17)]
    _, ref = make_approved("repo", EXPERIENCE)
    memory_refs = []
    for _ in range(16):
        memory_refs.append(
            {"family": "memory", "artifact_id": "memory", "revision": make_memory("repo").revision}
        )

    ok = make_candidate("repo", EXPERIENCE, source_refs=sources[:16], artifact_refs=memory_refs)
    assert len(ok.latest.source_refs) + len(ok.latest.artifact_refs) == 32

    with pytest.raises(InvalidRequest) as raised:
        make_candidate("repo", EXPERIENCE, source_refs=sources, artifact_refs=memory_refs)
    assert error_types(raised.value) == ["evidence_count"]
    with pytest.raises(InvalidRequest):
        make_candidate("repo", EXPERIENCE, source_refs=sources[:16], artifact_refs=[*memory_refs, ref])


@pytest.mark.django_db
def test_a_nonexistent_source_is_invalid_evidence() -> None:
    with pytest.raises(InvalidRequest) as raised:
        make_candidate("repo", EXPERIENCE, source_refs=[{"name": "content", "source_id": "never-captured"}])
    assert error_types(raised.value) == ["evidence_missing"]
    assert raised.value.details["errors"][0]["loc"] == ["body", "source_refs", 0]


@pytest.mark.django_db
def test_a_source_of_another_scope_is_invalid_evidence() -> None:
    foreign = make_source("other-scope")
    with pytest.raises(InvalidRequest) as raised:
        make_candidate("repo", EXPERIENCE, source_refs=[foreign])
    assert error_types(raised.value) == ["evidence_missing"]


@pytest.mark.django_db
def test_a_source_with_another_type_is_invalid_evidence() -> None:
    source = make_source("repo")
    with pytest.raises(InvalidRequest):
        make_candidate("repo", EXPERIENCE, source_refs=[{**source, "name": "prompt"}])


@pytest.mark.django_db
def test_a_nonexistent_artifact_revision_is_invalid_evidence() -> None:
    _, ref = make_approved("repo", EXPERIENCE)
    with pytest.raises(InvalidRequest) as raised:
        make_candidate("repo", EXPERIENCE, artifact_refs=[{**ref, "revision": 2}])
    assert error_types(raised.value) == ["evidence_missing"]
    assert raised.value.details["errors"][0]["loc"] == ["body", "artifact_refs", 0]


@pytest.mark.django_db
def test_an_artifact_revision_of_another_scope_is_invalid_evidence() -> None:
    _, foreign = make_approved("other-scope", EXPERIENCE)
    with pytest.raises(InvalidRequest):
        make_candidate("repo", EXPERIENCE, artifact_refs=[foreign])
    with pytest.raises(InvalidRequest):
        make_candidate("repo", EXPERIENCE, artifact_refs=[foreign], target=foreign)


@pytest.mark.django_db
def test_revise_applies_the_same_evidence_rules_and_writes_nothing_when_they_fail() -> None:
    candidate = make_candidate("repo", EXPERIENCE)
    with pytest.raises(InvalidRequest):
        revise(candidate, source_refs=[], artifact_refs=[])
    with pytest.raises(InvalidRequest):
        revise(candidate, source_refs=[make_source("elsewhere")])
    candidate.refresh_from_db()
    assert candidate.version == 1 and CandidateVersion.objects.filter(candidate=candidate).count() == 1


# --- fault injection ------------------------------------------------------------------------------------


class InjectedFault(Exception):
    pass


def _fail() -> None:
    raise InjectedFault("injected after the revision insert")


@pytest.mark.django_db
def test_a_failure_after_the_revision_insert_rolls_back_a_new_artifact_completely(monkeypatch: Any) -> None:
    candidate = make_candidate("repo", EXPERIENCE)
    monkeypatch.setattr(services, "_after_revision_written", _fail)

    with pytest.raises(InjectedFault):
        approve(candidate)

    assert not ArtifactRevision.objects.exists()
    assert not Artifact.objects.filter(family="experience").exists()
    assert not ExperienceSearchDocument.objects.exists()
    assert not ReviewDecision.objects.exists()
    candidate.refresh_from_db()
    assert (candidate.status, candidate.version, candidate.result_head_id) == ("pending", 1, None)


@pytest.mark.django_db
def test_a_failure_after_the_revision_insert_leaves_a_targeted_head_untouched(monkeypatch: Any) -> None:
    first_proposal = experience_proposal()
    _, first = make_approved("repo", EXPERIENCE, proposal=first_proposal)
    head_before = model_to_dict(Artifact.objects.get(artifact_id=first["artifact_id"]))
    document_before = ExperienceSearchDocument.objects.get(head_id=head_before["id"]).terms
    candidate = make_candidate(
        "repo",
        EXPERIENCE,
        proposal=experience_proposal(lesson="never shown"),
        artifact_refs=[first],
        target=first,
    )
    monkeypatch.setattr(services, "_after_revision_written", _fail)

    with pytest.raises(InjectedFault):
        approve(candidate)

    assert model_to_dict(Artifact.objects.get(artifact_id=first["artifact_id"])) == head_before
    assert ExperienceSearchDocument.objects.get(head_id=head_before["id"]).terms == document_before
    assert list(
        ArtifactRevision.objects.filter(artifact_id=first["artifact_id"]).values_list("revision", flat=True)
    ) == [1]
    assert experience_search(scope_id="repo", query="never shown", limit=8) == []
    candidate.refresh_from_db()
    assert (candidate.status, candidate.version) == ("pending", 1)
    # The seam restored, the same approval succeeds: nothing half-written blocks it.
    monkeypatch.undo()
    assert result_ref(approve(candidate)) == {**first, "revision": 2}


# --- concurrency ---------------------------------------------------------------------------------------


def _approver(candidate: Candidate, reviewer: Any, version: int = 1) -> Callable[[], Any]:
    return lambda: services.candidate_approve(
        scope_id=candidate.scope_id,
        candidate_id=candidate.candidate_id,
        expected_version=version,
        reviewer=reviewer,
    )


def _assert_one_approval_of(candidate: Candidate, results: list[Any]) -> None:
    winners = [r for r in results if isinstance(r, Candidate)]
    losers = [r for r in results if isinstance(r, CandidateTerminal)]
    assert len(winners) == 1 and len(losers) == len(results) - 1, results
    assert all(loser.details == {"status": "approved"} for loser in losers)
    candidate.refresh_from_db()
    assert (candidate.status, candidate.version) == ("approved", 1)
    assert ArtifactRevision.objects.filter(family="experience", scope_id=candidate.scope_id).count() == 1
    assert Artifact.objects.filter(family="experience", scope_id=candidate.scope_id).count() == 1
    assert ReviewDecision.objects.filter(candidate=candidate).count() == 1
    assert ExperienceSearchDocument.objects.filter(scope_id=candidate.scope_id).count() == 1
    assert result_ref(winners[0]) == result_ref(candidate)


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_approving_the_same_version_at_once_write_one_revision() -> None:
    """Runs on both databases: SQLite serializes the writers (IMMEDIATE), PostgreSQL locks the row."""
    candidate = make_candidate("race", EXPERIENCE)
    alice, bob = make_reviewer("alice"), make_reviewer("bob")

    results = run_together([_approver(candidate, alice), _approver(candidate, bob)])

    _assert_one_approval_of(candidate, results)


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_four_reviewers_approving_the_same_version_at_once_write_one_revision_on_postgres() -> None:
    candidate = make_candidate("race-pg", EXPERIENCE)
    reviewers = [make_reviewer(f"reviewer-{i}") for i in range(4)]

    results = run_together([_approver(candidate, reviewer) for reviewer in reviewers])

    _assert_one_approval_of(candidate, results)


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_approve_racing_revise_leaves_one_consistent_winner() -> None:
    candidate = make_candidate("race-pg", EXPERIENCE)
    reviewer = make_reviewer()
    revised_proposal = experience_proposal(lesson="the revised lesson")
    revised_submission = submission(scope_id="race-pg", proposal=revised_proposal)

    def do_revise() -> Candidate:
        return services.candidate_revise(
            scope_id="race-pg",
            candidate_id=candidate.candidate_id,
            expected_version=1,
            submission=revised_submission,
            reviewer=reviewer,
        )

    approved, revised = run_together([_approver(candidate, reviewer), do_revise])

    candidate.refresh_from_db()
    versions = CandidateVersion.objects.filter(candidate=candidate).count()
    if isinstance(approved, Candidate):
        assert isinstance(revised, CandidateTerminal) and revised.details == {"status": "approved"}, revised
        assert (candidate.status, candidate.version, versions) == ("approved", 1, 1)
        revision = ArtifactRevision.objects.get(scope_id="race-pg")
        assert revision.content == candidate.latest.proposal != revised_proposal
    else:
        assert isinstance(approved, CandidateConflict), approved
        assert approved.details == {"expected_version": 1, "current_version": 2}
        assert isinstance(revised, Candidate) and revised.version == 2
        assert (candidate.status, candidate.version, versions) == ("pending", 2, 2)
        assert candidate.latest.proposal == revised_proposal
        assert not ArtifactRevision.objects.filter(scope_id="race-pg").exists()
        assert not ReviewDecision.objects.exists()


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_two_approvals_targeting_the_same_head_one_wins_and_the_other_conflicts() -> None:
    _, first = make_approved("race-pg", EXPERIENCE)
    left = make_candidate(
        "race-pg",
        EXPERIENCE,
        proposal=experience_proposal(lesson="left"),
        artifact_refs=[first],
        target=first,
    )
    right = make_candidate(
        "race-pg",
        EXPERIENCE,
        proposal=experience_proposal(lesson="right"),
        artifact_refs=[first],
        target=first,
    )
    reviewer = make_reviewer()

    results = run_together([_approver(left, reviewer), _approver(right, reviewer)])

    winners = [r for r in results if isinstance(r, Candidate)]
    losers = [r for r in results if isinstance(r, ArtifactConflict)]
    assert len(winners) == 1 and len(losers) == 1, results
    assert losers[0].details == {"current": {**first, "revision": 2}}
    head = Artifact.objects.get(artifact_id=first["artifact_id"])
    assert head.current_revision == 2
    revisions = list(ArtifactRevision.objects.filter(head=head).order_by("revision"))
    assert [(r.revision, r.parent_revision) for r in revisions] == [(1, None), (2, 1)]
    assert revisions[1].content == winners[0].latest.proposal
    assert head.searchable_text == experience_text(winners[0].latest.proposal)
    loser = right if winners[0].candidate_id == left.candidate_id else left
    loser.refresh_from_db()
    assert (loser.status, loser.version, loser.result_head_id) == ("pending", 1, None)
    assert ExperienceSearchDocument.objects.filter(head=head).count() == 1
    assert search.verify_index(scope_id="race-pg").ok
