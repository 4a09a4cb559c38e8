"""The review audit trail in the admin: decisions filterable by reviewer and decided date,
searchable by a prefix of the result artifact id, and a decision page that shows what was approved, from which
evidence, what became searchable, with links both ways (decision <-> revision) and to the Inbox."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from powercontext.core.models import ArtifactRevision, Source
from review import services as review_services
from review.models import ReviewDecision
from tests.admin.test_admin import ESCAPED, PAYLOAD, RAW, results, url
from tests.review.factories import (
    experience_proposal,
    make_approved,
    make_candidate,
    make_reviewer,
    make_source,
)


@pytest.fixture(autouse=True)
def fast_password_hasher(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def staff(admin_user: Any, client: Any) -> Any:
    client.force_login(admin_user)
    return client


def decision_of(candidate: Any) -> ReviewDecision:
    return ReviewDecision.objects.get(candidate=candidate)


def test_decisions_filter_by_reviewer(staff: Any, db: None) -> None:
    alice, bob = make_reviewer("alice"), make_reviewer("bob")
    by_alice = {decision_of(make_approved("repo", reviewer=alice)[0]).pk for _ in range(2)}
    rejected = make_candidate("repo", "skill")
    review_services.candidate_reject(
        scope_id="repo", candidate_id=rejected.candidate_id, expected_version=1, reason="no", reviewer=alice
    )
    by_alice.add(decision_of(rejected).pk)
    by_bob = {decision_of(make_approved("repo", reviewer=bob)[0]).pk}

    assert {d.pk for d in results(staff, ReviewDecision, reviewer__id__exact=alice.pk)} == by_alice
    assert {d.pk for d in results(staff, ReviewDecision, reviewer__id__exact=bob.pk)} == by_bob
    listing = staff.get(url(ReviewDecision, "changelist"))
    assert b"By reviewer" in listing.content and b"alice" in listing.content


def test_decisions_filter_by_decided_date(staff: Any, db: None) -> None:
    old = decision_of(make_approved("repo")[0])
    new = decision_of(make_approved("repo")[0])
    when = timezone.make_aware(datetime.datetime(2024, 3, 5, 12, 0))
    ReviewDecision.objects.filter(pk=old.pk).update(decided_at=when)

    assert [d.pk for d in results(staff, ReviewDecision, decided_at__year=2024)] == [old.pk]
    day = {"decided_at__year": 2024, "decided_at__month": 3, "decided_at__day": 5}
    assert [d.pk for d in results(staff, ReviewDecision, **day)] == [old.pk]
    assert results(staff, ReviewDecision, decided_at__year=2024, decided_at__month=4) == []
    today = timezone.localdate(new.decided_at)
    assert new.pk in {d.pk for d in results(staff, ReviewDecision, decided_at__year=today.year)}
    listing = staff.get(url(ReviewDecision, "changelist"))
    assert b"2024" in listing.content  # the date hierarchy offers the year


def test_decisions_are_searchable_by_result_artifact_id(staff: Any, db: None) -> None:
    approved, ref = make_approved("repo")
    make_approved("repo")
    update, _ = make_approved("repo", proposal=experience_proposal(), artifact_refs=[ref], target=ref)

    found = {d.pk for d in results(staff, ReviewDecision, q=ref["artifact_id"])}

    assert found == {decision_of(approved).pk, decision_of(update).pk}
    # A prefix is enough (issue 22), and a prefix no id has finds nothing.
    assert {d.pk for d in results(staff, ReviewDecision, q=ref["artifact_id"][:-1])} == found
    assert results(staff, ReviewDecision, q="id:exp_zzzz") == []


def test_the_decision_page_shows_text_evidence_searchable_text_and_links(staff: Any, db: None) -> None:
    source = make_source("repo", source_id="chat-42")
    _, cited = make_approved("repo", "skill")
    approved, ref = make_approved(
        "repo",
        proposal=experience_proposal(situation="the cache stampeded at noon"),
        source_refs=[source],
        artifact_refs=[cited],
    )
    decision = decision_of(approved)
    revision = ArtifactRevision.objects.get(head=approved.result_head, revision=ref["revision"])
    cited_revision = ArtifactRevision.objects.get(
        artifact_id=cited["artifact_id"], revision=cited["revision"]
    )
    source_row = Source.objects.get(scope_id="repo", source_id="chat-42")

    page = staff.get(url(ReviewDecision, "change", decision.pk))

    assert page.status_code == 200
    html = page.content.decode()
    assert "the cache stampeded at noon" in html and "situation" in html
    assert f'href="{url(Source, "change", source_row.pk)}"' in html
    assert f'href="{url(ArtifactRevision, "change", cited_revision.pk)}"' in html
    assert revision.searchable_text and "stampeded" in revision.searchable_text
    assert revision.searchable_text in html
    assert f'href="{url(ArtifactRevision, "change", revision.pk)}"' in html
    assert f'href="{reverse("admin:review_candidate_change", args=[approved.pk])}"' in html
    assert f'href="{reverse("review:candidate", args=[approved.pk])}"' in html


def test_a_rejection_page_shows_the_rejected_text_and_no_revision(staff: Any, db: None) -> None:
    candidate = make_candidate("repo", proposal=experience_proposal(situation="a rejected idea"))
    review_services.candidate_reject(
        scope_id="repo",
        candidate_id=candidate.candidate_id,
        expected_version=1,
        reason="dup",
        reviewer=make_reviewer(),
    )

    page = staff.get(url(ReviewDecision, "change", decision_of(candidate).pk))

    assert page.status_code == 200
    assert b"a rejected idea" in page.content
    assert b"/admin/powercontext/artifactrevision/" not in page.content.split(b'id="content-main"')[-1]
    assert f'href="{reverse("review:candidate", args=[candidate.pk])}"'.encode() in page.content


def test_the_revision_page_links_back_to_its_decision_and_candidate(staff: Any, db: None) -> None:
    approved, ref = make_approved("repo")
    decision = decision_of(approved)
    revision = ArtifactRevision.objects.get(head=approved.result_head, revision=ref["revision"])

    page = staff.get(url(ArtifactRevision, "change", revision.pk))

    assert page.status_code == 200
    html = page.content.decode()
    assert f'href="{url(ReviewDecision, "change", decision.pk)}"' in html
    assert f'href="{reverse("admin:review_candidate_change", args=[approved.pk])}"' in html
    assert revision.searchable_text and revision.searchable_text in html


def test_untrusted_proposal_text_renders_inert_on_the_decision_page(staff: Any, db: None) -> None:
    approved, ref = make_approved(
        "repo",
        proposal=experience_proposal(situation=f"cache {PAYLOAD}", lesson=PAYLOAD),
        source_refs=[make_source("repo", source_id=f"src {PAYLOAD}")],
    )
    revision = ArtifactRevision.objects.get(head=approved.result_head, revision=ref["revision"])

    for page in (
        staff.get(url(ReviewDecision, "change", decision_of(approved).pk)),
        staff.get(url(ArtifactRevision, "change", revision.pk)),
    ):
        assert page.status_code == 200
        assert RAW not in page.content
        assert ESCAPED in page.content


def test_the_decision_changelist_keeps_a_constant_query_count(staff: Any, db: None) -> None:
    reviewer = make_reviewer()

    def add(n: int) -> None:
        for _ in range(n):
            make_approved("repo", reviewer=reviewer, source_refs=[make_source("repo")])

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            response = staff.get(url(ReviewDecision, "changelist"))
        assert response.status_code == 200
        return len(queries)

    add(2)
    staff.get(url(ReviewDecision, "changelist"))  # warm the session and content-type caches
    at_2 = count()
    add(18)
    assert ReviewDecision.objects.count() == 20

    assert count() == at_2
