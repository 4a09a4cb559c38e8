"""Issue 13 item 7 through Django's test client: sorts, the scope prefix filter and its index,
family counts that follow the filters, row flags, "12 of 34" on the candidate page, decision
messages that link to the result, errors tied to their fields, and constant query counts."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
import time_machine
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from review.models import Candidate
from review.selectors import counts as count_selectors
from review.selectors import queue as queue_selectors
from tests.review.conftest import (
    approve,
    experience,
    make_candidate,
    make_update_candidate,
    revise,
    services,
)
from tests.review.test_inbox_views import _queries, client_for, rows_of, text_of, url

pytestmark = pytest.mark.django_db


def reject(candidate: Candidate, reviewer: User) -> Candidate:
    return services.candidate_reject(
        scope_id=candidate.scope_id,
        candidate_id=candidate.candidate_id,
        expected_version=candidate.version,
        reason="Not useful.",
        reviewer=reviewer,
    )


def position_of(body: str) -> str | None:
    found = re.search(r"<span class=\"position[^\"]*\" data-position>([^<]*)</span>", body)
    return found.group(1) if found else None


# --- sorts ------------------------------------------------------------------------------------


def test_the_pending_queue_sorts_by_waiting_time_newest_or_scope(viewer: User) -> None:
    b1 = make_candidate("b-repo")
    a1 = make_candidate("a-repo", family="skill")
    c1 = make_candidate("c-repo")
    a2 = make_candidate("A-repo")
    client = client_for(viewer)
    assert rows_of(client.get(url("queue"))) == [b1.pk, a1.pk, c1.pk, a2.pk]
    assert rows_of(client.get(url("queue") + "?sort=waiting")) == [b1.pk, a1.pk, c1.pk, a2.pk]
    assert rows_of(client.get(url("queue") + "?sort=newest")) == [a2.pk, c1.pk, a1.pk, b1.pk]
    by_scope = rows_of(client.get(url("queue") + "?sort=scope"))
    scopes = dict(Candidate.objects.values_list("pk", "scope_id"))
    assert [scopes[pk] for pk in by_scope] == sorted(scopes[pk] for pk in by_scope)
    assert by_scope[-2:] == [b1.pk, c1.pk]


def test_the_sort_pages_by_keyset_both_ways(viewer: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queue_selectors, "PAGE_SIZE", 2)
    made = [make_candidate(scope) for scope in ("m", "c", "x", "c", "a")]
    client = client_for(viewer)
    expected = [c.pk for c in sorted(made, key=lambda c: (c.scope_id, c.pk))]
    first = client.get(url("queue") + "?sort=scope")
    assert rows_of(first) == expected[:2]
    second = client.get(url("queue") + f"?sort=scope&after={expected[1]}")
    assert rows_of(second) == expected[2:4]
    assert rows_of(client.get(url("queue") + f"?sort=scope&after={expected[3]}")) == expected[4:]
    assert rows_of(client.get(url("queue") + f"?sort=scope&before={expected[2]}")) == expected[:2]
    assert f"sort=scope&after={expected[1]}" in text_of(first)
    newest = [c.pk for c in reversed(made)]
    assert rows_of(client.get(url("queue") + f"?sort=newest&after={newest[1]}")) == newest[2:4]


@pytest.mark.parametrize("sort", ["bogus", "decided", "", "scope\x00"])
def test_an_unknown_sort_falls_back_to_the_default_with_a_message(viewer: User, sort: str) -> None:
    first, second = make_candidate(), make_candidate()
    response = client_for(viewer).get(url("queue"), {"sort": sort})
    assert response.status_code == 200
    assert rows_of(response) == [first.pk, second.pk]
    body = text_of(response)
    assert ("data-sort-problem" in body) == bool(sort)
    assert "sort=" not in re.search(r'data-open href="([^"]*)"', body).group(1)


def test_decided_lists_read_by_decision_time_and_show_the_reviewer(reviewer: User) -> None:
    other = User.objects.create_user("second-reviewer")
    first, second, third = make_candidate(), make_candidate(), make_candidate()
    now = timezone.now()
    with time_machine.travel(now - timedelta(hours=3)):
        approve(second, reviewer)
    with time_machine.travel(now - timedelta(hours=2)):
        approve(third, other)
    with time_machine.travel(now - timedelta(hours=1)):
        approve(first, reviewer)
    client = client_for(reviewer)
    response = client.get(url("queue") + "?status=approved")
    assert rows_of(response) == [first.pk, third.pk, second.pk]
    assert re.findall(r"<td class=\"meta-cell\" data-reviewer>([^<]*)</td>", text_of(response)) == [
        "reviewer",
        "second-reviewer",
        "reviewer",
    ]
    assert rows_of(client.get(url("queue") + "?status=approved&sort=newest")) == [
        third.pk,
        second.pk,
        first.pk,
    ]
    assert "data-sort-problem" not in text_of(client.get(url("queue") + "?status=approved&sort=decided"))


def test_a_decided_list_pages_by_decision_time(reviewer: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queue_selectors, "PAGE_SIZE", 2)
    made = [make_candidate() for _ in range(5)]
    now = timezone.now()
    for hours, n in enumerate((3, 0, 4, 1, 2)):
        with time_machine.travel(now - timedelta(hours=10 - hours)):
            reject(made[n], reviewer)
    newest_decided = [made[n].pk for n in (2, 1, 4, 0, 3)]
    client = client_for(reviewer)
    assert rows_of(client.get(url("queue") + "?status=rejected")) == newest_decided[:2]
    after = rows_of(client.get(url("queue") + f"?status=rejected&after={newest_decided[1]}"))
    assert after == newest_decided[2:4]
    before = rows_of(client.get(url("queue") + f"?status=rejected&before={newest_decided[2]}"))
    assert before == newest_decided[:2]


# --- scope filter -------------------------------------------------------------------------------


def test_the_scope_filter_suggests_existing_scopes(viewer: User) -> None:
    make_candidate("git:github.com/acme/app")
    make_candidate("git:github.com/acme/app")
    make_candidate("local:/srv/tools")
    body = text_of(client_for(viewer).get(url("queue")))
    assert 'list="scope-suggestions"' in body
    datalist = re.search(r'<datalist id="scope-suggestions">(.*?)</datalist>', body, re.S).group(1)
    assert re.findall(r'<option value="([^"]*)">', datalist) == [
        "git:github.com/acme/app",
        "local:/srv/tools",
    ]


def test_scope_suggestions_are_distinct_sorted_capped_and_one_query(monkeypatch: pytest.MonkeyPatch) -> None:
    for scope in ("delta", "alpha", "charlie", "alpha", "bravo", "delta", "echo"):
        make_candidate(scope)
    assert count_selectors.scope_suggestions() == ["alpha", "bravo", "charlie", "delta", "echo"]
    monkeypatch.setattr(count_selectors, "SCOPE_SUGGESTIONS", 3)
    with CaptureQueriesContext(connection) as captured:
        assert count_selectors.scope_suggestions() == ["alpha", "bravo", "charlie"]
    assert len(captured.captured_queries) == 1


def test_the_scope_prefix_match_walks_an_index() -> None:
    rows = Candidate.objects.filter(status="pending", scope_id__istartswith="git:github.com/acme")
    sql, params = rows.query.sql_with_params()
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
            plan = " ".join(str(row[-1]) for row in cursor.fetchall())
            assert "scope_id>?" in plan, plan  # the LIKE optimization: a range on the index
        else:
            # An empty table gives every index the same cost: keep only the one under test (the
            # test's transaction rolls the DDL back) to see that it serves the LIKE as a range.
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("DROP INDEX candidate_status_scope, candidate_queue, candidate_scope_queue")
            cursor.execute(f"EXPLAIN {sql}", params)
            plan = " ".join(row[0] for row in cursor.fetchall())
            assert "~>=~" in plan, plan  # the prefix became an index range condition
    assert "candidate_scope_prefix" in plan, plan


# --- counts, flags --------------------------------------------------------------------------------


def test_family_counts_follow_the_other_filters(viewer: User, reviewer: User) -> None:
    make_candidate("app")
    make_candidate("app", family="skill")
    make_candidate("app", proposal=experience(lesson="Pin the Docker base image."))
    make_candidate("tools")
    approve(make_candidate("app"), reviewer)
    client = client_for(viewer)

    def counts(query: str) -> tuple[str, str]:
        body = text_of(client.get(url("queue") + query))
        found = re.search(r'data-count="experience">([^<]*)<.*?data-count="skill">([^<]*)<', body, re.S)
        return found.group(1), found.group(2)

    assert counts("") == ("3", "1")
    assert counts("?scope=app") == ("2", "1")
    assert counts("?scope=app&family=skill") == ("2", "1")
    assert counts("?q=docker") == ("1", "0")
    assert counts("?status=approved") == ("1", "0")
    body = text_of(client.get(url("queue") + "?scope=app&family=experience"))
    assert 'href="/review/?scope=app&amp;family=skill"' in body


def test_rows_flag_stale_updates_and_hidden_characters(reviewer: User) -> None:
    base = approve(make_candidate(), reviewer)
    fresh = make_update_candidate(base)
    stale = make_update_candidate(base)
    approve(fresh, reviewer)
    hidden = make_candidate(proposal=experience(action="Deploy\u200b on Fridays."))
    plain = make_candidate()
    body = text_of(client_for(reviewer).get(url("queue")))
    rows = {
        int(pk): row
        for pk, row in re.findall(r'<tr data-queue-row data-pk="(\d+)".*?>(.*?)</tr>', body, re.S)
    }
    assert set(rows) == {stale.pk, hidden.pk, plain.pk}
    assert 'data-flag="stale"' in rows[stale.pk] and 'data-flag="marks"' not in rows[stale.pk]
    assert 'data-flag="marks"' in rows[hidden.pk] and 'data-flag="stale"' not in rows[hidden.pk]
    assert 'data-flag="stale"' not in rows[plain.pk] and 'data-flag="marks"' not in rows[plain.pk]
    assert "\u200b" not in body


# --- the candidate page ---------------------------------------------------------------------------


def test_the_candidate_page_says_where_it_stands_in_its_queue(viewer: User, reviewer: User) -> None:
    made = [make_candidate(scope) for scope in ("b", "a", "b", "c", "a")]
    client = client_for(viewer)
    assert position_of(text_of(client.get(url("candidate", made[2])))) == "3 of 5"
    assert position_of(text_of(client.get(url("candidate", made[2]) + "?sort=newest"))) == "3 of 5"
    assert position_of(text_of(client.get(url("candidate", made[0]) + "?sort=newest"))) == "5 of 5"
    by_scope = text_of(client.get(url("candidate", made[2]) + "?sort=scope"))
    assert position_of(by_scope) == "4 of 5"
    assert f'href="{url("candidate", made[3])}?sort=scope" data-key="n"' in by_scope
    assert f'href="{url("candidate", made[0])}?sort=scope" data-key="p"' in by_scope
    assert position_of(text_of(client.get(url("candidate", made[2]) + "?scope=b"))) == "2 of 2"
    assert position_of(text_of(client.get(url("candidate", made[1]) + "?scope=b"))) == "not in this queue"
    approve(made[4], reviewer)
    assert position_of(text_of(client.get(url("candidate", made[4]) + "?status=approved"))) == "1 of 1"
    queue_link = re.search(r'href="([^"]*)" data-key="u"', by_scope).group(1)
    assert queue_link == f"/review/?sort=scope#c{made[2].pk}"


def test_the_position_is_capped_like_the_counts(viewer: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(count_selectors, "COUNT_CAP", 3)
    made = [make_candidate() for _ in range(5)]
    client = client_for(viewer)
    assert position_of(text_of(client.get(url("candidate", made[1])))) == "2 of 3+"
    assert position_of(text_of(client.get(url("candidate", made[4])))) == "past the first 3"


def test_after_a_decision_the_message_links_to_the_result(reviewer: User) -> None:
    first, second = make_candidate(), make_candidate()
    client = client_for(reviewer)
    response = client.post(url("approve", first), {"expected_version": 1}, follow=True)
    body = text_of(response)
    link = re.search(r'<a href="([^"]*)" data-result>View the result</a>', body).group(1)
    assert link == url("candidate", first) + "?status=approved"
    result = text_of(client.get(link))
    assert "Approved" in result and "experience/" in result
    response = client.post(url("reject", second), {"expected_version": 1, "reason": "No."}, follow=True)
    link = re.search(r'<a href="([^"]*)" data-result>', text_of(response)).group(1)
    assert link == url("candidate", second) + "?status=rejected"


def test_next_after_a_decision_follows_the_chosen_sort(reviewer: User) -> None:
    first, second, third = make_candidate("b"), make_candidate("c"), make_candidate("a")
    client = client_for(reviewer)
    response = client.post(url("approve", third) + "?sort=scope", {"expected_version": 1})
    assert response["Location"] == url("candidate", first) + "?sort=scope"
    response = client.post(url("approve", second) + "?sort=newest", {"expected_version": 1})
    assert response["Location"] == url("candidate", first) + "?sort=newest"


def test_a_reject_error_is_tied_to_the_reason_field(reviewer: User) -> None:
    candidate = make_candidate()
    client = client_for(reviewer)
    response = client.post(url("reject", candidate), {"expected_version": 1, "reason": " "})
    body = text_of(client.get(response["Location"]))
    field = re.search(r'<textarea name="reason"[^>]*>', body).group(0)
    assert 'aria-invalid="true"' in field and 'aria-describedby="reject-errors"' in field
    assert '<div role="alert" id="reject-errors"><ul class="errorlist">' in body
    clean = text_of(client.get(url("candidate", candidate)))
    assert "aria-invalid" not in re.search(r'<textarea name="reason"[^>]*>', clean).group(0)


def test_revise_errors_are_tied_to_their_fields(reviewer: User) -> None:
    candidate = make_candidate()
    client = client_for(reviewer)
    data = {"expected_version": 1, **experience(lesson="")}
    response = client.post(url("revise", candidate), data)
    body = text_of(client.get(response["Location"]))
    field = re.search(r'<textarea name="lesson"[^>]*>', body).group(0)
    assert 'aria-invalid="true"' in field
    described = re.search(r'aria-describedby="([^"]*)"', field).group(1)
    assert f'id="{described}"' in body


# --- query counts ---------------------------------------------------------------------------------


def _bulk(n: int, reviewer: User, *, decided: bool = False) -> None:
    for i in range(n):
        candidate = make_candidate(f"scope-{i % 7}", family="skill" if i % 3 == 0 else "experience")
        if decided:
            approve(candidate, reviewer)


@pytest.mark.parametrize(
    "query",
    ["?sort=scope", "?sort=newest&scope=scope-1", "?status=approved", "?status=approved&sort=scope"],
)
def test_sorted_and_decided_queues_cost_the_same_queries_for_10_and_200_rows(
    reviewer: User, query: str
) -> None:
    client = client_for(reviewer)
    decided = "approved" in query
    _bulk(10, reviewer, decided=decided)
    small = _queries(client, url("queue") + query)
    _bulk(190, reviewer, decided=decided)
    assert Candidate.objects.count() == 200
    assert _queries(client, url("queue") + query) == small
    middle = Candidate.objects.order_by("pk")[100].pk
    assert _queries(client, url("queue") + query + f"&after={middle}") == small


def test_a_page_of_updates_costs_one_query_for_their_targets(reviewer: User) -> None:
    client = client_for(reviewer)
    base = approve(make_candidate(), reviewer)
    make_candidate()
    plain = _queries(client, url("queue"))
    for _ in range(5):
        make_update_candidate(base)
    assert _queries(client, url("queue")) == plain + 1


@pytest.mark.parametrize("query", ["", "?sort=scope", "?sort=newest&family=experience"])
def test_the_candidate_page_costs_the_same_queries_in_a_queue_of_10_and_200(
    reviewer: User, query: str
) -> None:
    client = client_for(reviewer)
    _bulk(5, reviewer)
    candidate = make_candidate("scope-1")
    _bulk(4, reviewer)
    small = _queries(client, url("candidate", candidate) + query)
    _bulk(190, reviewer)
    assert _queries(client, url("candidate", candidate) + query) == small
    revised = revise(candidate, reviewer, lesson="Reworded.")
    assert _queries(client, url("candidate", revised) + query) == small
