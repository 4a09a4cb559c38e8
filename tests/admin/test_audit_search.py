"""Admin search of the review audit (issue 22): candidates, decisions and artifact revisions by
a partial id, a reviewer's username, words of the text and a scope prefix; every term must
match; the cost is a constant number of SQL queries whatever the table size."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from powercontext.core.models import ArtifactRevision
from review import services
from review.models import Candidate, ReviewDecision
from tests.admin.test_admin import results, url
from tests.review.factories import (
    experience_proposal,
    make_approved,
    make_candidate,
    make_reviewer,
    make_source,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_password_hasher(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def staff(admin_user: Any, client: Any) -> Any:
    client.force_login(admin_user)
    return client


@pytest.fixture
def world(db: None) -> dict[str, Any]:
    """Two reviewers, three scopes, approved and rejected candidates with distinct words."""
    alice, bob = make_reviewer("alice"), make_reviewer("bob")
    cache, _ = make_approved(
        "payments-ledger",
        reviewer=alice,
        proposal=experience_proposal(lesson="Warm the café cache before the retry budget runs out"),
    )
    queue, _ = make_approved(
        "payments", reviewer=bob, proposal=experience_proposal(lesson="Drain the queue before deploys")
    )
    rejected = make_candidate("search-infra", proposal=experience_proposal(lesson="Reindex nightly"))
    services.candidate_reject(
        scope_id="search-infra",
        candidate_id=rejected.candidate_id,
        expected_version=1,
        reason="Too vague to act on.",
        reviewer=alice,
    )
    pending = make_candidate("search-infra", proposal=experience_proposal(lesson="Shard by tenant"))
    return {
        "alice": alice,
        "bob": bob,
        "cache": cache,
        "queue": queue,
        "rejected": rejected,
        "pending": pending,
    }


def pks(staff: Any, model: Any, q: str) -> set[int]:
    return {row.pk for row in results(staff, model, q=q)}


def decision_pk(candidate: Candidate) -> int:
    return ReviewDecision.objects.get(candidate=candidate).pk


def revision_pks(candidate: Candidate) -> set[int]:
    assert candidate.result_head is not None
    return set(ArtifactRevision.objects.filter(head=candidate.result_head).values_list("pk", flat=True))


# --- partial id -----------------------------------------------------------------------------------


def test_candidates_by_a_prefix_of_the_id_with_or_without_its_family_prefix(staff: Any, world: Any) -> None:
    cache = world["cache"]
    hexpart = cache.candidate_id.removeprefix("cand_")
    assert pks(staff, Candidate, cache.candidate_id[:12]) == {cache.pk}
    assert pks(staff, Candidate, hexpart[:8]) == {cache.pk}
    assert pks(staff, Candidate, f"id:{hexpart[:8].upper()}") == {cache.pk}  # ids are lower-case hex
    assert pks(staff, Candidate, f"#{cache.pk}") == {cache.pk}
    assert pks(staff, Candidate, "id:cand_zzzz") == set()


def test_decisions_and_revisions_by_a_prefix_of_the_artifact_id(staff: Any, world: Any) -> None:
    cache = world["cache"]
    artifact_id = cache.result_head.artifact_id
    assert pks(staff, ReviewDecision, artifact_id[:10]) == {decision_pk(cache)}
    assert pks(staff, ReviewDecision, cache.candidate_id.removeprefix("cand_")[:8]) == {decision_pk(cache)}
    assert pks(staff, ArtifactRevision, artifact_id.removeprefix("exp_")[:8]) == revision_pks(cache)
    assert pks(staff, Candidate, f"id:{artifact_id[:10]}") == {cache.pk}  # the result it wrote


# --- reviewer ---------------------------------------------------------------------------------------


def test_by_reviewer_username(staff: Any, world: Any) -> None:
    cache, queue, rejected = world["cache"], world["queue"], world["rejected"]
    by_alice = {decision_pk(cache), decision_pk(rejected)}
    assert pks(staff, ReviewDecision, "alice") == by_alice
    assert pks(staff, ReviewDecision, "ALICE") == by_alice
    assert pks(staff, ReviewDecision, "by:al") == by_alice  # a qualified term takes a prefix
    assert pks(staff, ReviewDecision, "al") == set()  # a bare term needs the whole username
    assert pks(staff, Candidate, "bob") == {queue.pk}
    assert pks(staff, ArtifactRevision, "by:bob") == revision_pks(queue)
    assert pks(staff, ReviewDecision, "by:nobody") == set()


def test_by_the_writer_of_the_decided_version(staff: Any, world: Any) -> None:
    carol = make_reviewer("carol")
    candidate = make_candidate("payments")
    latest = candidate.latest
    revised = services.candidate_revise(
        scope_id="payments",
        candidate_id=candidate.candidate_id,
        expected_version=1,
        submission=services.Submission(
            proposal={**latest.proposal, "lesson": "Carol's wording"},
            source_refs=latest.source_refs,
            artifact_refs=[],
            target=None,
            reason=None,
        ),
        reviewer=carol,
    )
    services.candidate_approve(
        scope_id="payments", candidate_id=revised.candidate_id, expected_version=2, reviewer=world["bob"]
    )
    assert pks(staff, ReviewDecision, "carol") == {decision_pk(revised)}
    listing = staff.get(url(ReviewDecision, "changelist")).content.decode()
    assert "carol (reviewer)" in listing and "no account (pipeline or local agent)" in listing


# --- words ------------------------------------------------------------------------------------------


def test_by_words_of_the_text(staff: Any, world: Any) -> None:
    cache, queue, rejected, pending = world["cache"], world["queue"], world["rejected"], world["pending"]
    assert pks(staff, Candidate, "retry budget") == {cache.pk}  # every word must match
    assert pks(staff, Candidate, "retry deploys") == set()
    assert pks(staff, Candidate, '"budget runs"') == {cache.pk}  # a quoted phrase
    assert pks(staff, Candidate, "RETRY") == {cache.pk}  # case-insensitive
    # Non-ASCII matches the stored text, not its JSON escape (SQLite folds only ASCII case).
    assert pks(staff, Candidate, "café") == {cache.pk}
    assert pks(staff, Candidate, "text:shard") == {pending.pk}
    assert pks(staff, ReviewDecision, "drain") == {decision_pk(queue)}
    assert pks(staff, ReviewDecision, "vague") == {decision_pk(rejected)}  # the reject reason
    assert pks(staff, ArtifactRevision, "café cache") == revision_pks(cache)


# --- scope prefix -----------------------------------------------------------------------------------


def test_by_scope_prefix(staff: Any, world: Any) -> None:
    cache, queue, rejected, pending = world["cache"], world["queue"], world["rejected"], world["pending"]
    assert pks(staff, Candidate, "scope:payments") == {cache.pk, queue.pk}
    assert pks(staff, Candidate, "scope:payments-") == {cache.pk}
    assert pks(staff, Candidate, "scope:SEARCH") == {rejected.pk, pending.pk}
    assert pks(staff, ReviewDecision, "scope:search") == {decision_pk(rejected)}
    assert pks(staff, ArtifactRevision, "scope:payments-l") == revision_pks(cache)
    assert pks(staff, Candidate, "scope:search alice") == {rejected.pk}  # terms combine


def test_search_help_is_shown(staff: Any, world: Any) -> None:
    listing = staff.get(url(Candidate, "changelist")).content.decode()
    assert "id:3fa9, by:ali, scope:payments" in listing


# --- cost -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", [Candidate, ReviewDecision, ArtifactRevision], ids=lambda m: m.__name__)
def test_a_search_costs_the_same_queries_at_any_size(staff: Any, model: Any) -> None:
    reviewer = make_reviewer("grower")
    source = make_source("grow")

    def grow(n: int) -> None:
        for _ in range(n):
            make_approved("grow", reviewer=reviewer, source_refs=[source])

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            response = staff.get(url(model, "changelist"), {"q": "scope:gr grower batch 3fa9"})
        assert response.status_code == 200
        return len(queries)

    grow(5)
    staff.get(url(model, "changelist"))  # warm the session and content-type caches
    before = count()
    grow(25)
    assert count() == before
