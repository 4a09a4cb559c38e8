"""Similar Experiences on the candidate page: found through the product's search (approved) and
the pending scan, scoped, excluding the candidate itself; one-click "Reject as duplicate of ...";
constant query counts; the pipeline's near-duplicate rule is the same function."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from review.models import Candidate, ReviewDecision
from review.selectors import near_window, similar
from tests.review.conftest import approve, experience, make_candidate, revise, skill

pytestmark = pytest.mark.django_db

TLS = {
    "situation": "The staging TLS certificates expired during the quarterly security audit.",
    "action": "Renewed the certificates by hand and paused the audit for a day.",
    "outcome": "The audit resumed after the renewed certificates were deployed.",
    "lesson": "Rotate the staging TLS certificates two weeks before the quarterly audit.",
}
TLS_AGAIN = {**TLS, "lesson": "Rotate staging TLS certificates two weeks before every quarterly audit."}
VACUUM = {
    "situation": "Nightly reports slowed down as the events table bloated.",
    "action": "Scheduled a vacuum of the events table after each bulk delete.",
    "outcome": "Report queries returned to their usual speed.",
    "lesson": "Vacuum big tables after bulk deletes.",
}


def client_for(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def page_of(client: Client, candidate: Candidate) -> str:
    response = client.get(reverse("review:candidate", args=[candidate.pk]))
    assert response.status_code == 200
    return str(response.content.decode())


def similar_items(page: str) -> list[str]:
    return re.findall(r'data-similar-item="([^"]+)"', page)


def test_the_page_lists_approved_and_pending_near_duplicates_of_its_scope_only(reviewer: User) -> None:
    original = approve(make_candidate(proposal=dict(TLS)), reviewer)
    pending = make_candidate(proposal=dict(TLS_AGAIN))
    unrelated = make_candidate(proposal=dict(VACUUM))
    make_candidate("elsewhere", proposal=dict(TLS))  # another scope: never listed
    approve(make_candidate("elsewhere", proposal=dict(TLS)), reviewer)
    under_review = make_candidate(proposal=dict(TLS_AGAIN))

    page = page_of(client_for(reviewer), under_review)
    assert original.result_head is not None
    artifact_id = original.result_head.artifact_id
    assert similar_items(page) == [str(pending.pk), artifact_id]  # identical text first
    assert str(under_review.pk) not in similar_items(page) and str(unrelated.pk) not in similar_items(page)
    assert "100% similar" in page and "near-duplicate" in page
    # The approved one links to the Inbox page of the approval that wrote it; the pending one to itself.
    assert (
        f'<a href="{reverse("review:candidate", args=[original.pk])}"><code>{artifact_id}</code> revision 1</a>'
        in page
    )
    assert f'<a href="{reverse("review:candidate", args=[pending.pk])}">candidate #{pending.pk}</a>' in page
    assert f"Reject as duplicate of {artifact_id}" in page
    assert f"Reject as duplicate of #{pending.pk}" in page


def test_nothing_similar_says_so_skills_have_their_own_card_and_decided_candidates_none(
    reviewer: User,
) -> None:
    make_candidate(proposal=dict(TLS))
    lonely = make_candidate(proposal=dict(VACUUM))
    client = client_for(reviewer)
    assert "shares enough words" in page_of(client, lonely)
    skill_page = page_of(client, make_candidate(family="skill"))
    assert "Similar Skills" in skill_page and "Similar Experiences" not in skill_page
    assert "Similar Experiences" not in page_of(
        client, approve(make_candidate(proposal=dict(TLS_AGAIN)), reviewer)
    )


def test_an_update_does_not_list_its_own_target(reviewer: User) -> None:
    base = approve(make_candidate(proposal=dict(TLS)), reviewer)
    assert base.result_head is not None
    ref = {"family": "experience", "artifact_id": base.result_head.artifact_id, "revision": 1}
    update = make_candidate(proposal=dict(TLS_AGAIN), artifact_refs=[ref], target=ref, source_refs=[])
    assert base.result_head.artifact_id not in similar_items(page_of(client_for(reviewer), update))


def test_reject_as_duplicate_is_one_post_through_the_standard_reject(reviewer: User, viewer: User) -> None:
    original = approve(make_candidate(proposal=dict(TLS)), reviewer)
    assert original.result_head is not None
    candidate = make_candidate(proposal=dict(TLS_AGAIN))
    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    page = page_of(client, candidate)
    form = re.search(
        r'<form method="post" action="([^"]+)">\s*<input type="hidden" name="csrfmiddlewaretoken" value="([^"]+)">'
        r'\s*<input type="hidden" name="expected_version" value="(\d+)">'
        r'\s*<input type="hidden" name="reason" value="([^"]+)">\s*<button[^>]*>Reject as duplicate of '
        + re.escape(original.result_head.artifact_id),
        page,
    )
    assert form is not None
    action, token, version, reason = form.groups()
    assert action == reverse("review:reject", args=[candidate.pk])
    reason = html.unescape(reason)
    assert reason == f"Duplicate of approved Experience {original.result_head.artifact_id} (revision 1)."
    # Viewers see the list but no reject buttons.
    assert "Reject as duplicate" not in page_of(client_for(viewer), candidate)

    response = client.post(
        action, {"csrfmiddlewaretoken": token, "expected_version": version, "reason": reason}
    )
    assert response.status_code == 302
    rejected = Candidate.objects.get(pk=candidate.pk)
    assert rejected.status == Candidate.Status.REJECTED
    decision = ReviewDecision.objects.get(candidate=rejected)
    assert (decision.reason, decision.reviewer, decision.version) == (reason, reviewer, 1)
    # The standard reject's success message settles the reject draft of this candidate.
    followed = client.get(response["Location"])
    assert f'data-done="reject:{candidate.pk}"' in followed.content.decode()
    # The same post again is the standard 409 conflict page, not a 500.
    again = client.post(action, {"csrfmiddlewaretoken": token, "expected_version": version, "reason": reason})
    assert again.status_code == 409


def test_similar_items_are_ranked_and_scored_by_shared_terms(reviewer: User) -> None:
    approve(make_candidate(proposal=dict(TLS)), reviewer)
    twin = make_candidate(proposal=dict(TLS))
    make_candidate(proposal=dict(VACUUM))
    found = similar.similar_experiences(scope_id="repo", proposal=TLS)
    assert [(s.status, s.percent) for s in found[:2]] == [("approved", 100), ("pending", 100)]
    assert found[1].candidate_pk == twin.pk
    assert found[-1].similarity < similar.SHOWN_FLOOR  # the vacuum note shares next to nothing
    assert similar.is_near_duplicate("repo", TLS_AGAIN)
    unrelated = {
        "situation": "Docs builds failed on the new theme.",
        "action": "Pinned the theme version.",
        "outcome": "Builds passed again.",
        "lesson": "Pin documentation themes.",
    }
    assert not similar.is_near_duplicate("repo", unrelated)
    assert not similar.is_near_duplicate("other-scope", TLS)
    assert similar.similarity(set(), {"a"}) == 0.0


def _queries(client: Client, candidate: Candidate) -> int:
    similar.forget_digests()
    with CaptureQueriesContext(connection) as captured:
        response = client.get(reverse("review:candidate", args=[candidate.pk]))
    assert response.status_code == 200
    return len(captured.captured_queries)


def test_the_candidate_page_costs_the_same_queries_for_1_and_many_similar(reviewer: User) -> None:
    client = client_for(reviewer)
    approve(make_candidate("few", proposal=dict(TLS)), reviewer)
    make_candidate("few", proposal=dict(VACUUM))  # a pending version to read, shown neither
    few = make_candidate("few", proposal=dict(TLS_AGAIN))
    for n in range(5):
        approve(make_candidate("many", proposal={**TLS, "outcome": f"{TLS['outcome']} Take {n}."}), reviewer)
    for n in range(30):
        make_candidate("many", proposal={**TLS, "action": f"{TLS['action']} Try {n}."})
    many = make_candidate("many", proposal=dict(TLS_AGAIN))
    assert len(similar_items(page_of(client, few))) == 1
    assert len(similar_items(page_of(client, many))) == similar.SHOWN
    assert _queries(client, few) == _queries(client, many)


def test_the_pending_default_proposals_of_other_tests_stay_listable(reviewer: User) -> None:
    # The factory's default proposals differ only in a number: they are near-duplicates.
    first, second = make_candidate(proposal=experience()), make_candidate(proposal=experience())
    items = similar_items(page_of(client_for(reviewer), second))
    assert items == [str(first.pk)]


def test_a_revised_pending_candidate_is_compared_by_its_new_version(reviewer: User) -> None:
    other = make_candidate(proposal=dict(TLS))
    mine = make_candidate(proposal=dict(TLS_AGAIN))
    client = client_for(reviewer)
    assert similar_items(page_of(client, mine)) == [str(other.pk)]  # its version 1 is now cached
    revise(other, reviewer, **VACUUM)
    assert similar_items(page_of(client, mine)) == []


def _flags(client: Client, query: str = "") -> dict[int, str | None]:
    """Each queue row's near-duplicate flag: the earlier copy it names, or None."""
    response = client.get(reverse("review:queue") + query)
    assert response.status_code == 200
    rows = re.findall(r'<tr data-queue-row data-pk="(\d+)".*?</tr>', response.content.decode(), re.S)
    blocks = re.split(r'(?=<tr data-queue-row data-pk=")', response.content.decode())
    out = {}
    for block in blocks:
        if m := re.match(r'<tr data-queue-row data-pk="(\d+)"', block):
            flag = re.search(r'data-flag="near-duplicate" data-duplicate-of="([^"]+)"', block)
            out[int(m.group(1))] = flag.group(1) if flag else None
    assert sorted(out) == sorted(int(r) for r in rows)
    return out


def test_the_queue_flags_only_the_later_copy_of_a_near_duplicate_pair(reviewer: User) -> None:
    """The queue's row flag follows the same rule as the card, and only the later copy of a
    pair carries it, naming the earlier (an approved Experience always came first); other
    scopes, unrelated text, an update's own target and an unrelated Skill never flag."""
    approved = approve(make_candidate("approved-scope", proposal=dict(TLS)), reviewer)
    against_approved = make_candidate("approved-scope", proposal=dict(TLS_AGAIN))
    twin_a = make_candidate("twins", proposal=dict(VACUUM))
    twin_b = make_candidate("twins", proposal=dict(VACUUM))
    unrelated = make_candidate("twins", proposal=dict(TLS))
    lonely = make_candidate("lonely", proposal=dict(TLS_AGAIN))  # its twin lives in another scope
    assert approved.result_head is not None
    ref = {"family": "experience", "artifact_id": approved.result_head.artifact_id, "revision": 1}
    own_target = make_candidate("approved-scope", proposal=dict(VACUUM), artifact_refs=[ref], target=ref)
    a_skill = make_candidate("twins", family=Candidate.Family.SKILL, proposal=skill())
    similar.forget_digests()

    flags = _flags(client_for(reviewer))

    assert flags == {
        against_approved.pk: approved.result_head.artifact_id,
        twin_a.pk: None,
        twin_b.pk: f"#{twin_a.pk}",
        unrelated.pk: None,
        lonely.pk: None,
        own_target.pk: None,
        a_skill.pk: None,
    }


def test_the_queue_flag_costs_the_same_queries_for_a_page_of_few_and_many(reviewer: User) -> None:
    client = client_for(reviewer)
    for _ in range(3):
        make_candidate(proposal=dict(TLS))
    approve(make_candidate(proposal=dict(VACUUM)), reviewer)
    similar.forget_digests()
    with CaptureQueriesContext(connection) as few:
        client.get(reverse("review:queue"))
    for _ in range(60):
        make_candidate(proposal=dict(TLS_AGAIN))
    for _ in range(5):
        approve(make_candidate(proposal=dict(VACUUM)), reviewer)
    similar.forget_digests()
    with CaptureQueriesContext(connection) as many:
        client.get(reverse("review:queue"))
    assert len(many) == len(few)


# --- bounded work (issue 20, N2) ------------------------------------------------------------------


def test_the_queue_flag_never_reads_a_proposal_outside_the_page(reviewer: User) -> None:
    # The flag compares the term sketches written with each version, so the proposals of the
    # hundreds of pending rows it scans are never read or analyzed on the request.
    for _ in range(60):
        make_candidate(proposal=dict(TLS_AGAIN))
    page = list(
        Candidate.objects.filter(status=Candidate.Status.PENDING).select_related("latest").order_by("pk")[:5]
    )
    similar.forget_digests()

    with CaptureQueriesContext(connection) as queries:
        flags = similar.near_duplicate_flags(page)

    # The first of the identical copies is the original; every later one names it.
    assert len(flags) == 5 and flags[page[0].pk] is None
    assert all(flag is not None and flag.candidate_pk == page[0].pk for flag in list(flags.values())[1:])
    assert not [q["sql"] for q in queries if '"proposal"' in q["sql"]]


def test_the_approved_scan_stops_at_its_byte_budget(reviewer: User, monkeypatch: pytest.MonkeyPatch) -> None:
    approve(make_candidate("budget", proposal=dict(TLS)), reviewer)
    again = make_candidate("budget", proposal=dict(TLS_AGAIN))
    page = list(Candidate.objects.filter(pk=again.pk).select_related("latest"))
    flag = similar.near_duplicate_flags(page)[again.pk]
    assert flag is not None and flag.status == "approved"

    monkeypatch.setattr(near_window, "APPROVED_BYTES", 10)

    assert similar.near_duplicate_flags(page) == {again.pk: None}


def test_sketches_give_exact_jaccard_for_small_sets_and_close_estimates_for_large_ones() -> None:
    small_a, small_b = {f"t{i}" for i in range(100)}, {f"t{i}" for i in range(20, 130)}
    exact = similar.similarity(small_a, small_b)
    assert similar.sketch_similarity(similar.sketch(small_a), 100, similar.sketch(small_b), 110) == exact

    big_a = {f"w{i}" for i in range(5000)}
    big_b = {f"w{i}" for i in range(500, 5500)}  # Jaccard 4500 / 5500 = 0.818
    estimate = similar.sketch_similarity(similar.sketch(big_a), 5000, similar.sketch(big_b), 5000)
    assert abs(estimate - 4500 / 5500) < 0.08
    assert len(similar.sketch(big_a)) == similar.SKETCH
