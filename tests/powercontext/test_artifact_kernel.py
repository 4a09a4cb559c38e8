"""The artifact kernel: Memory writes and approvals both move heads through
``artifact_revision_create``, and a head moved by someone else between the lock and the
compare-and-swap makes either of them fail with a conflict and write nothing."""

from __future__ import annotations

from importlib import import_module
from types import SimpleNamespace
from typing import Any

import pytest
from django.apps import apps
from django.db import connection, transaction
from django.db.models import F, Q

from powercontext.core.exceptions import ArtifactConflict, InvariantFailure, RevisionConflict
from powercontext.core.models import Artifact, ArtifactRevision
from powercontext.memory import artifacts
from powercontext.memory import services as services_memory
from review import services
from tests.powercontext.factories import citation_of, make_memory
from tests.review.factories import experience_proposal, make_approved, make_candidate, make_reviewer

pytestmark = pytest.mark.django_db


def row_counts() -> dict[str, int]:
    """Rows of every model of the core and review apps (auth rows and the Inbox's canned reasons,
    configuration seeded by a migration, aside)."""
    return {
        model._meta.label: model.objects.count()
        for app in ("powercontext", "review")
        for model in apps.get_app_config(app).get_models()
        if model._meta.label != "review.CannedReason"
    }


def heads() -> list[dict[str, Any]]:
    return list(Artifact.objects.order_by("pk").values())


@pytest.fixture
def head_moved_meanwhile(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Another writer wins the race: right before the kernel's compare-and-swap, every head
    moves one revision on (as a concurrent commit would have)."""
    moved: list[int] = []

    def move() -> None:
        moved.append(Artifact.objects.update(current_revision=F("current_revision") + 1))

    monkeypatch.setattr(artifacts, "_before_head_move", move)
    return moved


def test_memory_writes_and_approvals_use_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    original = artifacts.artifact_revision_create

    def spy(**kwargs: Any) -> int:
        calls.append(kwargs["head"].family)
        return original(**kwargs)

    monkeypatch.setattr("powercontext.memory.services.artifact_revision_create", spy)
    monkeypatch.setattr("review.services.artifact_revision_create", spy)
    first = make_memory("repo", "the cache lives in redis")
    make_approved("repo")
    assert calls == ["memory", "experience"]
    assert first.revision == 1


def test_a_head_moved_before_a_memory_write_is_a_revision_conflict_and_nothing_is_written(
    head_moved_meanwhile: list[int],
) -> None:
    with pytest.raises(RevisionConflict):
        make_memory("repo", "never stored")
    assert head_moved_meanwhile == [1]
    assert not Artifact.objects.exists()
    assert set(row_counts().values()) == {0}


def test_a_head_moved_before_a_revise_is_a_conflict_and_the_head_is_unchanged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from powercontext.memory import services as memory_services

    first = make_memory("repo", "deploys happen on tuesdays")
    before, heads_before = row_counts(), heads()
    monkeypatch.setattr(
        artifacts,
        "_before_head_move",
        lambda: Artifact.objects.update(current_revision=F("current_revision") + 1),
    )
    with pytest.raises(RevisionConflict):
        memory_services.memory_revise(
            scope_id="repo", citation=citation_of(first), kind="note", text="deploys happen on fridays"
        )
    assert (row_counts(), heads()) == (before, heads_before)


def test_a_head_moved_before_an_approval_is_an_artifact_conflict_and_nothing_is_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, first = make_approved("repo", proposal=experience_proposal())
    candidate = make_candidate(
        "repo", proposal=experience_proposal(lesson="a better lesson"), artifact_refs=[first], target=first
    )
    reviewer = make_reviewer()
    before, heads_before = row_counts(), heads()
    monkeypatch.setattr(
        artifacts,
        "_before_head_move",
        lambda: Artifact.objects.update(current_revision=F("current_revision") + 1),
    )
    with pytest.raises(ArtifactConflict) as raised:
        services.candidate_approve(
            scope_id="repo", candidate_id=candidate.candidate_id, expected_version=1, reviewer=reviewer
        )
    assert raised.value.details == {"current": {**first, "revision": 2}}
    assert (row_counts(), heads()) == (before, heads_before)
    candidate.refresh_from_db()
    assert (candidate.status, candidate.version) == ("pending", 1)


@pytest.mark.django_db(transaction=True)
def test_the_kernel_refuses_to_run_outside_a_transaction() -> None:
    head = Artifact.objects.create(scope_id="repo", family="memory", artifact_id="memory")
    with pytest.raises(InvariantFailure):
        artifacts.artifact_revision_create(head=head, expected_revision=0, content={})
    assert not ArtifactRevision.objects.exists()


def test_the_kernel_writes_lineage_and_moves_the_head() -> None:
    with transaction.atomic():
        head = artifacts.artifact_head_create(scope_id="repo", family="skill", prefix="skill")
        one = artifacts.artifact_revision_create(head=head, expected_revision=0, content={"n": 1})
        two = artifacts.artifact_revision_create(head=head, expected_revision=1, content={"n": 2})
    assert (one, two) == (1, 2)
    rows = list(
        ArtifactRevision.objects.filter(head=head)
        .order_by("revision")
        .values_list("revision", "parent_revision", "content")
    )
    assert rows == [(1, None, {"n": 1}), (2, 1, {"n": 2})]
    assert Artifact.objects.get(pk=head.pk).current_revision == 2
    with pytest.raises(ArtifactConflict), transaction.atomic():
        artifacts.artifact_revision_create(head=head, expected_revision=1, content={"n": "stale"})
    assert ArtifactRevision.objects.filter(head=head).count() == 2


def test_the_revision_row_keeps_the_searchable_text_it_wrote() -> None:
    with transaction.atomic():
        head = artifacts.artifact_head_create(scope_id="repo", family="skill", prefix="skill")
        artifacts.artifact_revision_create(head=head, expected_revision=0, content={"n": 1})
        artifacts.artifact_revision_create(
            head=head, expected_revision=1, content={"n": 2}, searchable_text="pinned resolver"
        )
    texts = list(
        ArtifactRevision.objects.filter(head=head)
        .order_by("revision")
        .values_list("searchable_text", flat=True)
    )
    assert texts == ["", "pinned resolver"]


def test_an_approved_experience_keeps_what_became_searchable_on_its_revision() -> None:
    approved, first = make_approved(
        "repo", "experience", proposal=experience_proposal(situation="cache stampede")
    )
    assert approved.result_head is not None
    revision = ArtifactRevision.objects.get(head=approved.result_head, revision=approved.result_revision)
    head = Artifact.objects.get(pk=approved.result_head.pk)
    assert revision.searchable_text and "stampede" in revision.searchable_text
    assert revision.searchable_text == head.searchable_text
    # A later revision replaces the head's search text; the first revision's row keeps its own.
    make_approved(
        "repo",
        "experience",
        proposal=experience_proposal(situation="thundering herd"),
        artifact_refs=[first],
        target=first,
    )
    revision.refresh_from_db()
    assert "stampede" in revision.searchable_text and "herd" not in revision.searchable_text
    second = ArtifactRevision.objects.get(head=head, revision=2)
    assert (
        "herd" in second.searchable_text
        and second.searchable_text == Artifact.objects.get(pk=head.pk).searchable_text
    )


# -- Artifact.recallable: set by the kernel, equal to the rule it replaced ----------------------

# The four conditions recall used to spell out on every query, written here independently.
OLD_RULE = Q(family="experience", state="active", current_revision__gte=1) & ~Q(searchable_text="")


def assert_recallable_is_the_old_rule() -> None:
    expected = set(Artifact.objects.filter(OLD_RULE).values_list("pk", flat=True))
    assert set(Artifact.objects.filter(recallable=True).values_list("pk", flat=True)) == expected
    assert Artifact.objects.exists()


def test_the_recallable_column_equals_the_old_rule_after_every_kind_of_write() -> None:
    reviewer = make_reviewer()
    note = make_memory("repo", "a remembered note")  # the Memory head: never recallable
    revised = services_memory.memory_revise(
        scope_id="repo", citation=citation_of(note), kind="note", text="revised"
    )
    assert_recallable_is_the_old_rule()

    approved, first = make_approved("repo", reviewer=reviewer)  # approve: a new Experience head
    make_approved("repo", "skill", reviewer=reviewer)  # a Skill head: approved, never recalled
    assert_recallable_is_the_old_rule()
    head = Artifact.objects.get(pk=approved.result_head_id)
    assert head.recallable

    # Supersede: an approval targeting the head moves it to revision 2.
    make_approved(
        "repo",
        reviewer=reviewer,
        proposal=experience_proposal(lesson="a later lesson"),
        target=first,
        artifact_refs=[first],
    )
    head.refresh_from_db()
    assert head.current_revision == 2 and head.recallable
    assert_recallable_is_the_old_rule()

    mutation = services_memory.memory_retire(scope_id="repo", citation=citation_of(revised))
    assert mutation.revision == 3
    with transaction.atomic():  # retire the Experience head
        artifacts.artifact_head_retire(head=Artifact.objects.select_for_update().get(pk=head.pk))
    head.refresh_from_db()
    assert head.state == Artifact.State.RETIRED and not head.recallable
    assert_recallable_is_the_old_rule()

    # A revision of a retired head makes it active, hence recallable, again.
    make_approved(
        "repo",
        reviewer=reviewer,
        proposal=experience_proposal(lesson="back again"),
        target={**first, "revision": 2},
        artifact_refs=[{**first, "revision": 2}],
    )
    head.refresh_from_db()
    assert head.current_revision == 3 and head.recallable
    assert_recallable_is_the_old_rule()


def test_the_migration_backfills_the_column_from_the_old_rule() -> None:
    reviewer = make_reviewer()
    make_memory("repo", "a note")
    make_approved("repo", reviewer=reviewer)
    make_approved("repo", "skill", reviewer=reviewer)
    _, retired = make_approved("other", reviewer=reviewer)
    with transaction.atomic():
        artifacts.artifact_head_retire(head=Artifact.objects.get(artifact_id=retired["artifact_id"]))
    Artifact.objects.update(recallable=False)  # as before the column existed

    migration = import_module("powercontext.core.migrations.0018_artifact_recallable")
    migration.backfill(apps, SimpleNamespace(connection=connection))  # it reads only the alias

    assert Artifact.objects.filter(recallable=True).count() == 1
    assert_recallable_is_the_old_rule()
