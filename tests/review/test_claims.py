"""Claims ("Assign to me"): services, Inbox views (permissions, CSRF, POST/redirect/GET), the
queue's claimant column and "Assigned to me" filter, and constant query counts."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from powercontext.core.exceptions import CandidateNotFound, CandidateTerminal
from review import services
from review.models import Candidate, CandidateClaim
from tests.review.conftest import approve, make_candidate, make_user, revise
from tests.review.test_inbox_views import _queries

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(db: None) -> User:
    return make_user("alice", reviewer=True)


@pytest.fixture
def bob(db: None) -> User:
    return make_user("bob", reviewer=True)


def claim(candidate: Candidate, user: User, seen: User | None = None) -> services.ClaimOutcome:
    return services.candidate_claim(
        scope_id=candidate.scope_id,
        candidate_id=candidate.candidate_id,
        reviewer=user,
        expected_claimant=seen.pk if seen is not None else None,
    )


def claimant(candidate: Candidate) -> str | None:
    found = CandidateClaim.objects.select_related("claimed_by").filter(candidate_id=candidate.pk).first()
    return found.claimed_by.username if found is not None else None


def url(name: str, candidate: Candidate | None = None) -> str:
    from django.urls import reverse

    return reverse(f"review:{name}", args=[candidate.pk] if candidate is not None else [])


def client_for(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def text_of(response: Any) -> str:
    return str(response.content.decode())


def claimants_in_queue(response: Any) -> dict[int, str]:
    """Row pk -> the text of its "Assigned" cell (tags stripped)."""
    rows = re.findall(
        r'<td class="num">(\d+)</td>.*?<td class="nowrap" data-claimant>(.*?)</td>', text_of(response), re.S
    )
    return {int(pk): re.sub(r"<[^>]+>", "", cell).strip() for pk, cell in rows}


# --- services -----------------------------------------------------------------------------------


def test_a_reviewer_claims_an_unclaimed_candidate_once(alice: User) -> None:
    candidate = make_candidate()
    assert claim(candidate, alice) == services.ClaimOutcome(changed=True)
    assert claimant(candidate) == "alice"
    assert claim(candidate, alice) == services.ClaimOutcome(changed=False)
    assert CandidateClaim.objects.count() == 1


def test_another_reviewer_takes_over_only_the_claim_they_saw(alice: User, bob: User) -> None:
    candidate = make_candidate()
    claim(candidate, alice)
    with pytest.raises(services.ClaimChanged):
        claim(candidate, bob)  # bob saw it unclaimed: alice's claim is reported, not taken
    assert claimant(candidate) == "alice"
    assert claim(candidate, bob, seen=alice) == services.ClaimOutcome(changed=True, previous="alice")
    assert claimant(candidate) == "bob"
    with pytest.raises(services.ClaimChanged):
        claim(candidate, alice)  # alice saw it unclaimed too


def test_unassign_releases_only_your_own_claim(alice: User, bob: User) -> None:
    candidate = make_candidate()
    claim(candidate, alice)
    kwargs = {"scope_id": candidate.scope_id, "candidate_id": candidate.candidate_id}
    assert services.candidate_unclaim(**kwargs, reviewer=bob) == services.ClaimOutcome(changed=False)
    assert claimant(candidate) == "alice"
    assert services.candidate_unclaim(**kwargs, reviewer=alice) == services.ClaimOutcome(changed=True)
    assert claimant(candidate) is None
    assert services.candidate_unclaim(**kwargs, reviewer=alice) == services.ClaimOutcome(changed=False)


def test_claims_never_block_a_decision_and_a_decision_drops_the_claim(alice: User, bob: User) -> None:
    approved, rejected, bulk = make_candidate(), make_candidate(), make_candidate()
    for candidate in (approved, rejected, bulk):
        claim(candidate, alice)
    approve(approved, bob)
    services.candidate_reject(
        scope_id=rejected.scope_id,
        candidate_id=rejected.candidate_id,
        expected_version=1,
        reason="Not now.",
        reviewer=bob,
    )
    outcomes = services.candidates_decide_bulk(
        items=[(bulk.pk, 1)], decision="approved", reason=None, reviewer=bob
    )
    assert [o.outcome for o in outcomes] == ["decided"]
    assert [Candidate.objects.get(pk=c.pk).status for c in (approved, rejected, bulk)] == [
        "approved",
        "rejected",
        "approved",
    ]
    assert CandidateClaim.objects.count() == 0


def test_a_revise_by_another_reviewer_keeps_the_claim(alice: User, bob: User) -> None:
    candidate = make_candidate()
    claim(candidate, alice)
    revised = revise(candidate, bob, lesson="Reworded by bob.")
    assert revised.version == 2
    assert claimant(candidate) == "alice"


def test_decided_or_unknown_candidates_cannot_be_claimed(alice: User) -> None:
    candidate = approve(make_candidate(), alice)
    with pytest.raises(CandidateTerminal):
        claim(candidate, alice)
    with pytest.raises(CandidateNotFound):
        services.candidate_claim(
            scope_id="repo", candidate_id="cand_nope", reviewer=alice, expected_claimant=None
        )
    assert CandidateClaim.objects.count() == 0


# --- candidate page ----------------------------------------------------------------------------


def test_assign_to_me_is_a_csrf_checked_post_that_redirects_back(alice: User, bob: User) -> None:
    candidate = make_candidate()
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    page = text_of(client.get(url("candidate", candidate) + "?family=experience"))
    assert "Assign to me" in page and "Nobody yet." in page
    assert client.post(url("claim", candidate), {"expected_claimant": 0}).status_code == 403
    assert claimant(candidate) is None
    token = client.cookies["csrftoken"].value
    response = client.post(
        url("claim", candidate) + "?family=experience", {"expected_claimant": 0, "csrfmiddlewaretoken": token}
    )
    assert response.status_code == 303
    assert response["Location"] == url("candidate", candidate) + "?family=experience"
    assert claimant(candidate) == "alice"
    page = text_of(client.get(response["Location"]))
    assert f"Candidate #{candidate.pk} is assigned to you." in page
    assert "To <b>you</b>" in page and "Unassign" in page and "Assign to me" not in page
    # A reload of the page after the redirect does not post again.
    assert f"Candidate #{candidate.pk} is assigned to you." not in text_of(client.get(response["Location"]))

    other = text_of(client_for(bob).get(url("candidate", candidate)))
    assert "To <b>alice</b>" in other
    assert "Take over from alice" in other
    assert f'name="expected_claimant" value="{alice.pk}"' in other


def test_taking_over_and_unassigning_through_the_page(alice: User, bob: User) -> None:
    candidate = make_candidate()
    claim(candidate, alice)
    bob_client = client_for(bob)
    stale = bob_client.post(url("claim", candidate), {"expected_claimant": 0})
    assert stale.status_code == 303
    assert claimant(candidate) == "alice"
    assert "changed since you looked" in text_of(bob_client.get(stale["Location"]))
    taken = bob_client.post(url("claim", candidate), {"expected_claimant": alice.pk})
    assert claimant(candidate) == "bob"
    assert "Took over candidate" in text_of(bob_client.get(taken["Location"]))
    released = bob_client.post(url("unclaim", candidate))
    assert released.status_code == 303
    assert claimant(candidate) is None
    assert "no longer assigned to you" in text_of(bob_client.get(released["Location"]))


def test_viewers_see_the_claimant_but_cannot_claim(alice: User, viewer: User) -> None:
    candidate = make_candidate()
    claim(candidate, alice)
    client = client_for(viewer)
    page = text_of(client.get(url("candidate", candidate)))
    assert "To <b>alice</b>" in page
    assert "Take over" not in page and "Unassign" not in page
    assert client.post(url("claim", candidate), {"expected_claimant": alice.pk}).status_code == 403
    assert client.post(url("unclaim", candidate)).status_code == 403
    assert claimant(candidate) == "alice"


def test_claim_urls_answer_get_anonymous_unknown_and_decided_without_a_500(alice: User) -> None:
    candidate = make_candidate()
    client = client_for(alice)
    assert client.get(url("claim", candidate))["Location"] == url("candidate", candidate)
    anonymous = Client().post(url("claim", candidate), {"expected_claimant": 0})
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    from django.urls import reverse

    assert client.post(reverse("review:claim", args=[987654]), {"expected_claimant": 0}).status_code == 404
    junk = client.post(url("claim", candidate), {"expected_claimant": "abc"})
    assert junk.status_code == 303 and claimant(candidate) is None
    decided = approve(candidate, alice)
    response = client.post(url("claim", decided), {"expected_claimant": 0})
    assert response.status_code == 303
    assert "already decided" in text_of(client.get(response["Location"]))
    assert "Assign to me" not in text_of(client.get(url("candidate", decided)))


# --- queue --------------------------------------------------------------------------------------


def test_the_queue_shows_each_claimant_and_you(alice: User, bob: User) -> None:
    mine, theirs, free = make_candidate(), make_candidate(), make_candidate()
    claim(mine, alice)
    claim(theirs, bob)
    cells = claimants_in_queue(client_for(alice).get(url("queue")))
    assert cells == {mine.pk: "you", theirs.pk: "bob", free.pk: "Assign to me"}
    cells = claimants_in_queue(client_for(bob).get(url("queue")))
    assert cells == {mine.pk: "alice", theirs.pk: "you", free.pk: "Assign to me"}


def test_assigned_to_me_lists_only_my_claims_and_keeps_the_filter(alice: User, bob: User) -> None:
    mine, theirs, free = make_candidate(), make_candidate(), make_candidate()
    claim(mine, alice)
    claim(theirs, bob)
    client = client_for(alice)
    page = client.get(url("queue") + "?assigned=me")
    assert list(claimants_in_queue(page)) == [mine.pk]
    assert f'href="{url("candidate", mine)}?assigned=me"' in text_of(page)
    assert list(claimants_in_queue(client_for(bob).get(url("queue") + "?assigned=me"))) == [theirs.pk]
    assert list(claimants_in_queue(client.get(url("queue") + "?assigned=nobody"))) == [free.pk]
    assert (
        claimants_in_queue(client.get(url("queue") + "?assigned=everyone")) == {}
    )  # invalid choice: no rows


def test_assign_to_me_from_the_queue_returns_to_the_queue(alice: User) -> None:
    first, second = make_candidate(), make_candidate()
    client = client_for(alice)
    page = text_of(client.get(url("queue") + "?family=experience"))
    action = f'formaction="{url("claim", second)}?back=queue&family=experience"'
    assert action in page
    response = client.post(
        url("claim", second) + "?back=queue&family=experience",
        {"expected_claimant": 0, "item": [f"{first.pk}:1"], "seen": 1, "reason": ""},
    )
    assert response.status_code == 303
    # Back to the same queue, scrolled to the row (the fragment).
    assert response["Location"] == url("queue") + f"?family=experience#c{second.pk}"
    assert claimant(second) == "alice" and claimant(first) is None
    assert Candidate.objects.get(pk=first.pk).status == "pending"  # the bulk form's fields did nothing


# --- query counts ------------------------------------------------------------------------------


def test_claims_keep_the_queue_and_candidate_page_at_a_constant_query_count(alice: User, bob: User) -> None:
    client = client_for(alice)
    for n in range(10):
        candidate = make_candidate()
        claim(candidate, alice if n % 2 else bob)
    small = _queries(client, url("queue"))
    small_mine = _queries(client, url("queue") + "?assigned=me")
    for n in range(190):
        candidate = make_candidate()
        claim(candidate, alice if n % 3 else bob)
    assert Candidate.objects.count() == 200 and CandidateClaim.objects.count() == 200
    assert _queries(client, url("queue")) == small
    assert _queries(client, url("queue") + "?assigned=me") == small_mine
    claimed, free = candidate, make_candidate()
    assert _queries(client, url("candidate", claimed)) == _queries(client, url("candidate", free))


# --- concurrency (PostgreSQL: real row locks, separate connections) --------------------------


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_two_reviewers_assigning_the_same_candidate_at_once_one_wins_the_other_is_told() -> None:
    from tests.powercontext.test_concurrency import run_together

    candidate = make_candidate("race-claim")
    first, second = make_user("first", reviewer=True), make_user("second", reviewer=True)

    results = run_together([lambda: claim(candidate, first), lambda: claim(candidate, second)])

    winners = [r for r in results if isinstance(r, services.ClaimOutcome)]
    assert winners == [services.ClaimOutcome(changed=True)], results
    assert sum(isinstance(r, services.ClaimChanged) for r in results) == 1, results
    assert CandidateClaim.objects.filter(candidate_id=candidate.pk).count() == 1


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_claim_racing_a_decision_never_outlives_it() -> None:
    from tests.powercontext.test_concurrency import run_together

    reviewer, other = make_user("decider", reviewer=True), make_user("claimer", reviewer=True)
    for _ in range(3):
        candidate = make_candidate("race-claim")
        results = run_together(
            [lambda c=candidate: approve(c, reviewer), lambda c=candidate: claim(c, other)]  # type: ignore[misc]
        )
        assert isinstance(results[0], Candidate), results
        assert isinstance(results[1], services.ClaimOutcome | CandidateTerminal), results
        assert Candidate.objects.get(pk=candidate.pk).status == Candidate.Status.APPROVED
        assert not CandidateClaim.objects.filter(candidate_id=candidate.pk).exists()
