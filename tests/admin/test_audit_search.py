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
from tests.review.test_governance import reject

pytestmark = pytest.mark.django_db


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
    reject(rejected, alice, "Too vague to act on.")
    pending = make_candidate("search-infra", proposal=experience_proposal(lesson="Shard by tenant"))
    return {
        "alice": alice,
        "bob": bob,
        "cache": cache,
        "queue": queue,
        "rejected": rejected,
        "pending": pending,
    }


def pks(admin_client: Any, model: Any, q: str) -> set[int]:
    return {row.pk for row in results(admin_client, model, q=q)}


def decision_pk(candidate: Candidate) -> int:
    return ReviewDecision.objects.get(candidate=candidate).pk


def revision_pks(candidate: Candidate) -> set[int]:
    assert candidate.result_head is not None
    return set(ArtifactRevision.objects.filter(head=candidate.result_head).values_list("pk", flat=True))


# --- partial id -----------------------------------------------------------------------------------


def test_candidates_by_a_prefix_of_the_id_with_or_without_its_family_prefix(
    admin_client: Any, world: Any
) -> None:
    cache = world["cache"]
    hexpart = cache.candidate_id.removeprefix("cand_")
    assert pks(admin_client, Candidate, cache.candidate_id[:12]) == {cache.pk}
    assert pks(admin_client, Candidate, hexpart[:8]) == {cache.pk}
    assert pks(admin_client, Candidate, f"id:{hexpart[:8].upper()}") == {cache.pk}  # ids are lower-case hex
    assert pks(admin_client, Candidate, f"#{cache.pk}") == {cache.pk}
    assert pks(admin_client, Candidate, "id:cand_zzzz") == set()


def test_decisions_and_revisions_by_a_prefix_of_the_artifact_id(admin_client: Any, world: Any) -> None:
    cache = world["cache"]
    artifact_id = cache.result_head.artifact_id
    assert pks(admin_client, ReviewDecision, artifact_id[:10]) == {decision_pk(cache)}
    assert pks(admin_client, ReviewDecision, cache.candidate_id.removeprefix("cand_")[:8]) == {
        decision_pk(cache)
    }
    assert pks(admin_client, ArtifactRevision, artifact_id.removeprefix("exp_")[:8]) == revision_pks(cache)
    assert pks(admin_client, Candidate, f"id:{artifact_id[:10]}") == {cache.pk}  # the result it wrote


# --- reviewer ---------------------------------------------------------------------------------------


def test_by_reviewer_username(admin_client: Any, world: Any) -> None:
    cache, queue, rejected = world["cache"], world["queue"], world["rejected"]
    by_alice = {decision_pk(cache), decision_pk(rejected)}
    assert pks(admin_client, ReviewDecision, "alice") == by_alice
    assert pks(admin_client, ReviewDecision, "ALICE") == by_alice
    assert pks(admin_client, ReviewDecision, "by:al") == by_alice  # a qualified term takes a prefix
    assert pks(admin_client, ReviewDecision, "al") == set()  # a bare term needs the whole username
    assert pks(admin_client, Candidate, "bob") == {queue.pk}
    assert pks(admin_client, ArtifactRevision, "by:bob") == revision_pks(queue)
    assert pks(admin_client, ReviewDecision, "by:nobody") == set()


def test_by_the_writer_of_the_decided_version(admin_client: Any, world: Any) -> None:
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
    assert pks(admin_client, ReviewDecision, "carol") == {decision_pk(revised)}
    listing = admin_client.get(url(ReviewDecision, "changelist")).content.decode()
    assert "carol (reviewer)" in listing and "no account (pipeline or local agent)" in listing


# --- words ------------------------------------------------------------------------------------------


def test_by_words_of_the_text(admin_client: Any, world: Any) -> None:
    cache, queue, rejected, pending = world["cache"], world["queue"], world["rejected"], world["pending"]
    assert pks(admin_client, Candidate, "retry budget") == {cache.pk}  # every word must match
    assert pks(admin_client, Candidate, "retry deploys") == set()
    assert pks(admin_client, Candidate, '"budget runs"') == {cache.pk}  # a quoted phrase
    assert pks(admin_client, Candidate, "RETRY") == {cache.pk}  # case-insensitive
    # Non-ASCII matches the stored text, not its JSON escape (SQLite folds only ASCII case).
    assert pks(admin_client, Candidate, "café") == {cache.pk}
    assert pks(admin_client, Candidate, "text:shard") == {pending.pk}
    assert pks(admin_client, ReviewDecision, "drain") == {decision_pk(queue)}
    assert pks(admin_client, ReviewDecision, "vague") == {decision_pk(rejected)}  # the reject reason
    assert pks(admin_client, ArtifactRevision, "café cache") == revision_pks(cache)


# --- scope prefix -----------------------------------------------------------------------------------


def test_by_scope_prefix(admin_client: Any, world: Any) -> None:
    cache, queue, rejected, pending = world["cache"], world["queue"], world["rejected"], world["pending"]
    assert pks(admin_client, Candidate, "scope:payments") == {cache.pk, queue.pk}
    assert pks(admin_client, Candidate, "scope:payments-") == {cache.pk}
    assert pks(admin_client, Candidate, "scope:SEARCH") == {rejected.pk, pending.pk}
    assert pks(admin_client, ReviewDecision, "scope:search") == {decision_pk(rejected)}
    assert pks(admin_client, ArtifactRevision, "scope:payments-l") == revision_pks(cache)
    assert pks(admin_client, Candidate, "scope:search alice") == {rejected.pk}  # terms combine


def test_search_help_is_shown(admin_client: Any, world: Any) -> None:
    listing = admin_client.get(url(Candidate, "changelist")).content.decode()
    assert "id:3fa9, by:ali, scope:payments" in listing


# --- cost -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", [Candidate, ReviewDecision, ArtifactRevision], ids=lambda m: m.__name__)
def test_a_search_costs_the_same_queries_at_any_size(admin_client: Any, model: Any) -> None:
    reviewer, source = make_reviewer("grower"), make_source("grow")
    counts = []
    for size in (5, 30):
        while ReviewDecision.objects.count() < size:
            make_approved("grow", reviewer=reviewer, source_refs=[source])
        admin_client.get(url(model, "changelist"))  # the session and content-type caches are warm
        with CaptureQueriesContext(connection) as queries:
            found = results(admin_client, model, q="scope:gr grower")
        counts.append(len(queries))
        assert len(found) == size
    assert counts[0] == counts[1]
