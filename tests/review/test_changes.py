"""Request changes, comment, the proposer's answer and Undo (issue 32): the services, the /v1
operations (reviewer vs agent tokens, validation, transitions, stale versions), an MCP round trip
and the Inbox views."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from powercontext.core.exceptions import CandidateConflict, CandidateTerminal, InvalidRequest
from review.models import Candidate, CandidateVersion, ReviewAction
from review.services import changes
from review.services.undo import UndoExpired, UndoForbidden
from tests.review.factories import (
    assert_error,
    assert_invalid,
    create_token,
    experience_proposal,
    make_candidate,
    make_reviewer,
    make_source,
    skill_proposal,
    submission,
)

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


def request_changes(
    candidate: Candidate, reviewer: Any, comment: str = "Name the resolver.", **kw: Any
) -> Candidate:
    return changes.candidate_request_changes(
        scope_id=candidate.scope_id,
        candidate_id=candidate.candidate_id,
        expected_version=candidate.version,
        comment=comment,
        reviewer=reviewer,
        **kw,
    )


def answer(candidate: Candidate, version: int, **kw: Any) -> Candidate:
    return changes.candidate_answer(
        scope_id=candidate.scope_id,
        candidate_id=candidate.candidate_id,
        expected_version=version,
        submission=submission(scope_id=candidate.scope_id, family=candidate.family, **kw),
    )


# --- services -------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_change_request_takes_the_candidate_out_of_the_queue_with_its_comment() -> None:
    candidate, reviewer = make_candidate(), make_reviewer()
    changed = request_changes(
        candidate, reviewer, field_comments={"action": "Which resolver?", "lesson": "  "}
    )
    assert changed.status == Candidate.Status.CHANGES_REQUESTED and changed.version == 1
    row = ReviewAction.objects.get(candidate=candidate)
    assert (row.action, row.candidate_version, row.reviewer_id) == ("changes_requested", 1, reviewer.pk)
    assert row.reason == "Name the resolver." and row.field_comments == {"action": "Which resolver?"}
    assert not Candidate.objects.filter(status=Candidate.Status.PENDING, pk=candidate.pk).exists()


@pytest.mark.django_db
def test_comments_are_stored_redacted() -> None:
    candidate = make_candidate()
    request_changes(
        candidate, make_reviewer(), f"the key {AWS_KEY} leaked", field_comments={"action": AWS_KEY}
    )
    row = ReviewAction.objects.get(candidate=candidate)
    assert AWS_KEY not in row.reason and AWS_KEY not in json.dumps(row.field_comments)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("comment", "fields", "loc"),
    [
        ("   ", None, ["body", "comment"]),
        ("x" * 2001, None, ["body", "comment"]),
        ("fine", {"name": "a Skill field"}, ["body", "field_comments", "name"]),
    ],
)
def test_a_change_request_without_a_usable_comment_is_refused(
    comment: str, fields: Any, loc: list[str]
) -> None:
    candidate = make_candidate()
    with pytest.raises(InvalidRequest) as caught:
        request_changes(candidate, make_reviewer(), comment, field_comments=fields)
    assert caught.value.details["errors"][0]["loc"] == loc
    assert Candidate.objects.get(pk=candidate.pk).status == Candidate.Status.PENDING
    assert not ReviewAction.objects.exists()


@pytest.mark.django_db
def test_a_stale_or_decided_candidate_gets_no_change_request() -> None:
    candidate, reviewer = make_candidate(), make_reviewer()
    with pytest.raises(CandidateConflict):
        changes.candidate_request_changes(
            scope_id="repo",
            candidate_id=candidate.candidate_id,
            expected_version=2,
            comment="c",
            reviewer=reviewer,
        )
    request_changes(candidate, reviewer)
    with pytest.raises(CandidateTerminal):
        request_changes(candidate, reviewer)
    assert ReviewAction.objects.filter(candidate=candidate).count() == 1


@pytest.mark.django_db
def test_the_answer_is_the_same_candidates_next_version_pending_again() -> None:
    first, candidate, last = make_candidate(), make_candidate(), make_candidate()
    request_changes(candidate, make_reviewer())
    answered = answer(candidate, 1, proposal=experience_proposal(action="pinned pip-tools to 7.4.1"))
    assert (answered.pk, answered.status, answered.version) == (candidate.pk, "pending", 2)
    assert answered.latest is not None and answered.latest.proposal["action"] == "pinned pip-tools to 7.4.1"
    assert list(CandidateVersion.objects.filter(candidate=candidate).values_list("version", flat=True)) == [
        1,
        2,
    ]
    # The queue orders by candidate: it is back between the two it sat between.
    pending = list(Candidate.objects.filter(status="pending").order_by("pk").values_list("pk", flat=True))
    assert pending == [first.pk, candidate.pk, last.pk]


@pytest.mark.django_db
def test_only_a_candidate_with_changes_requested_can_be_answered() -> None:
    candidate, reviewer = make_candidate(), make_reviewer()
    with pytest.raises(CandidateTerminal):
        answer(candidate, 1)
    request_changes(candidate, reviewer)
    with pytest.raises(CandidateConflict):
        answer(candidate, 2)
    answer(candidate, 1)
    with pytest.raises(CandidateTerminal):
        answer(candidate, 2)
    assert Candidate.objects.get(pk=candidate.pk).version == 2


@pytest.mark.django_db
def test_a_comment_keeps_the_status_and_needs_the_current_version() -> None:
    candidate, reviewer = make_candidate(), make_reviewer()
    changes.candidate_comment(
        scope_id="repo",
        candidate_id=candidate.candidate_id,
        expected_version=1,
        comment="Looks close.",
        reviewer=reviewer,
    )
    assert Candidate.objects.get(pk=candidate.pk).status == "pending"
    with pytest.raises(CandidateConflict):
        changes.candidate_comment(
            scope_id="repo",
            candidate_id=candidate.candidate_id,
            expected_version=3,
            comment="x",
            reviewer=reviewer,
        )
    assert list(ReviewAction.objects.values_list("action", flat=True)) == ["commented"]


@pytest.mark.django_db
def test_undo_returns_the_candidate_to_pending_within_the_window_only_for_its_reviewer() -> None:
    candidate, reviewer, other = make_candidate(), make_reviewer(), make_reviewer("other")
    request_changes(candidate, reviewer)
    with pytest.raises(UndoForbidden):
        changes.changes_undo(candidate_pk=candidate.pk, reviewer=other)
    late = timezone.now() + timedelta(minutes=60)
    with pytest.raises(UndoExpired):
        changes.changes_undo(candidate_pk=candidate.pk, reviewer=reviewer, now=late)
    undone = changes.changes_undo(candidate_pk=candidate.pk, reviewer=reviewer)
    assert (undone.status, undone.version) == ("pending", 1)
    assert list(ReviewAction.objects.order_by("pk").values_list("action", flat=True)) == [
        "changes_requested",
        "changes_withdrawn",
    ]
    with pytest.raises(CandidateTerminal):
        changes.changes_undo(candidate_pk=candidate.pk, reviewer=reviewer)


@pytest.mark.django_db
def test_an_answered_request_can_no_longer_be_undone() -> None:
    candidate, reviewer = make_candidate(), make_reviewer()
    request_changes(candidate, reviewer)
    answer(candidate, 1)
    assert not changes.changes_undo_offered(Candidate.objects.get(pk=candidate.pk), reviewer)
    with pytest.raises(CandidateTerminal):
        changes.changes_undo(candidate_pk=candidate.pk, reviewer=reviewer)


@pytest.mark.django_db
def test_bulk_request_changes_decides_each_item_on_its_own() -> None:
    fresh, stale, reviewer = make_candidate(), make_candidate(), make_reviewer()
    outcomes = changes.candidates_request_changes_bulk(
        items=[(fresh.pk, 1), (stale.pk, 5), (999_999, 1)], comment="Add evidence.", reviewer=reviewer
    )
    assert [(o.pk, o.outcome, o.code) for o in outcomes] == [
        (fresh.pk, "done", None),
        (stale.pk, "conflict", "candidate_conflict"),
        (999_999, "not_found", "candidate_not_found"),
    ]
    assert Candidate.objects.get(pk=fresh.pk).status == "changes_requested"
    assert Candidate.objects.get(pk=stale.pk).status == "pending"


# --- /v1 ------------------------------------------------------------------------------------------


@pytest.fixture
def reviewer_token(db: None) -> str:
    return create_token("alice", reviewer=True)[0]


@pytest.fixture
def agent_token(db: None) -> str:
    return create_token("bob")[0]


def post(api: Any, op: str, body: dict[str, Any], token: str | None) -> Any:
    api.token = token
    return api.post(f"/v1/artifact-candidates/{op}", body)


def body(candidate: Candidate, **extra: Any) -> dict[str, Any]:
    return {
        "scope_id": candidate.scope_id,
        "candidate_id": candidate.candidate_id,
        "expected_version": 1,
        **extra,
    }


@pytest.mark.parametrize("op", ["request-changes", "comment"])
def test_agent_tokens_may_not_request_changes_or_comment(api: Any, agent_token: str, op: str) -> None:
    candidate = make_candidate()
    assert_error(post(api, op, body(candidate, comment="c"), agent_token), 403, "forbidden")
    assert_error(post(api, op, body(candidate, comment="c"), None), 401, "unauthorized")
    assert not ReviewAction.objects.exists()


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"comment": ""},
        {"comment": "   "},
        {"comment": 5},
        {"comment": "c", "field_comments": {"action": ""}},
        {"comment": "c", "field_comments": ["action"]},
        {"comment": "c", "field_comments": {"instructions": "not an Experience field"}},
        {"comment": "c", "surprise": True},
        {"comment": "c", "expected_version": 0},
    ],
)
def test_bad_request_changes_bodies_are_422_never_500(
    api: Any, reviewer_token: str, extra: dict[str, Any]
) -> None:
    candidate = make_candidate()
    assert_invalid(post(api, "request-changes", body(candidate) | extra, reviewer_token))
    assert Candidate.objects.get(pk=candidate.pk).status == "pending"


def test_the_reviewer_requests_changes_and_the_agent_reads_and_answers_over_rest(
    api: Any, reviewer_token: str, agent_token: str
) -> None:
    candidate = make_candidate()
    sent = post(
        api,
        "request-changes",
        body(candidate, comment="Name the resolver.", field_comments={"action": "Which version?"}),
        reviewer_token,
    )
    assert sent.status_code == 200, sent.content
    assert sent.json()["candidate"]["status"] == "changes_requested"
    assert_error(
        post(api, "request-changes", body(candidate, comment="again"), reviewer_token),
        409,
        "candidate_terminal",
    )

    read = post(api, "thread", {"scope_id": "repo", "candidate_id": candidate.candidate_id}, agent_token)
    assert read.status_code == 200, read.content
    (entry,) = read.json()["thread"]
    assert {k: entry[k] for k in ("kind", "version", "comment", "field_comments")} == {
        "kind": "changes_requested",
        "version": 1,
        "comment": "Name the resolver.",
        "field_comments": {"action": "Which version?"},
    }
    # The shared read still answers, with the new status.
    api.token = agent_token
    got = api.post(
        "/v1/artifact-candidates/get", {"scope_id": "repo", "candidate_id": candidate.candidate_id}
    )
    assert got.json()["status"] == "changes_requested"

    fix = {
        "scope_id": "repo",
        "candidate_id": candidate.candidate_id,
        "expected_version": 1,
        "proposal": experience_proposal(action="pinned pip-tools 7.4.1"),
        "source_refs": [make_source()],
        "artifact_refs": [],
    }
    assert_error(post(api, "answer", fix | {"expected_version": 2}, agent_token), 409, "candidate_conflict")
    assert_invalid(post(api, "answer", fix | {"proposal": skill_proposal()}, agent_token))
    answered = post(api, "answer", fix, agent_token)
    assert answered.status_code == 201, answered.content
    assert answered.json()["candidate"]["candidate_id"] == candidate.candidate_id
    assert (answered.json()["candidate"]["version"], answered.json()["candidate"]["status"]) == (2, "pending")
    assert_error(post(api, "answer", fix | {"expected_version": 2}, agent_token), 409, "candidate_terminal")


def test_an_answer_in_another_scope_is_not_found(api: Any, agent_token: str) -> None:
    candidate = make_candidate()
    request_changes(candidate, make_reviewer())
    fix = {
        "scope_id": "other",
        "candidate_id": candidate.candidate_id,
        "expected_version": 1,
        "proposal": experience_proposal(),
        "source_refs": [make_source("other")],
        "artifact_refs": [],
    }
    assert_error(post(api, "answer", fix, agent_token), 404, "candidate_not_found")


def test_a_comment_over_rest_keeps_the_status(api: Any, reviewer_token: str) -> None:
    candidate = make_candidate()
    response = post(api, "comment", body(candidate, comment="Close."), reviewer_token)
    assert response.status_code == 200, response.content
    assert response.json()["candidate"]["status"] == "pending"
    assert [e["kind"] for e in response.json()["thread"]] == ["commented"]
    assert_error(
        post(api, "comment", body(candidate, comment="c", expected_version=2), reviewer_token),
        409,
        "candidate_conflict",
    )


def mcp_call(client: Client, token: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    response = client.post(
        "/mcp",
        data=json.dumps(request),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 200, response.content
    reply = response.json()
    return dict(reply["result"]) if "result" in reply else {"isError": True, "error": reply["error"]}


@pytest.mark.django_db
def test_an_agent_reads_the_thread_and_answers_over_mcp(agent_token: str) -> None:
    candidate = make_candidate()
    request_changes(
        candidate, make_reviewer(), "Say how it was pinned.", field_comments={"lesson": "Shorter."}
    )
    client = Client()
    read = mcp_call(
        client,
        agent_token,
        "get_artifact_candidate_thread",
        {"scope_id": "repo", "candidate_id": candidate.candidate_id},
    )
    assert not read["isError"], read
    assert read["structuredContent"]["candidate"]["status"] == "changes_requested"
    assert read["structuredContent"]["thread"][0]["field_comments"] == {"lesson": "Shorter."}
    refused = mcp_call(
        client, agent_token, "request_changes_artifact_candidate", body(candidate, comment="self-serve")
    )
    assert refused["isError"], refused  # a reviewer decision is no agent tool
    answered = mcp_call(
        client,
        agent_token,
        "answer_artifact_candidate",
        {
            "scope_id": "repo",
            "candidate_id": candidate.candidate_id,
            "expected_version": 1,
            "proposal": experience_proposal(lesson="Pin resolvers."),
            "source_refs": [make_source()],
            "artifact_refs": [],
        },
    )
    assert not answered["isError"], answered
    assert answered["structuredContent"]["candidate"]["version"] == 2
    assert Candidate.objects.get(pk=candidate.pk).status == "pending"


# --- the Inbox ------------------------------------------------------------------------------------


@pytest.fixture
def inbox(client: Client, reviewer: Any) -> Client:
    client.force_login(reviewer)
    return client


@pytest.mark.django_db
def test_the_inbox_requests_changes_then_offers_undo_that_returns_it_to_pending(inbox: Client) -> None:
    candidate = make_candidate()
    response = inbox.post(
        reverse("review:request-changes", args=[candidate.pk]),
        {"expected_version": 1, "comment": "Name the resolver.", "field_action": "Which one?"},
    )
    assert response.status_code == 302
    assert Candidate.objects.get(pk=candidate.pk).status == "changes_requested"
    page = inbox.get(reverse("review:candidate", args=[candidate.pk]))
    html = page.content.decode()
    assert 'data-thread-comment="changes_requested"' in html and "Name the resolver." in html
    assert "data-changes-undo" in html
    undone = inbox.post(reverse("review:changes-undo"), {"candidate": [candidate.pk]})
    assert undone.status_code == 303
    assert Candidate.objects.get(pk=candidate.pk).status == "pending"


@pytest.mark.django_db
def test_the_inbox_refuses_a_change_request_without_a_comment_and_keeps_it_pending(inbox: Client) -> None:
    candidate = make_candidate()
    response = inbox.post(
        reverse("review:request-changes", args=[candidate.pk]), {"expected_version": 1, "comment": " "}
    )
    assert response.status_code == 303
    page = inbox.get(response["Location"])
    assert "A comment is required." in page.content.decode()
    assert Candidate.objects.get(pk=candidate.pk).status == "pending"


@pytest.mark.django_db
def test_a_viewer_cannot_request_changes(client: Client, viewer: Any) -> None:
    client.force_login(viewer)
    candidate = make_candidate()
    response = client.post(
        reverse("review:request-changes", args=[candidate.pk]), {"expected_version": 1, "comment": "c"}
    )
    assert response.status_code == 403
    assert Candidate.objects.get(pk=candidate.pk).status == "pending"


@pytest.mark.django_db
def test_a_stale_inbox_change_request_is_the_conflict_page(inbox: Client) -> None:
    candidate = make_candidate()
    response = inbox.post(
        reverse("review:request-changes", args=[candidate.pk]), {"expected_version": 4, "comment": "c"}
    )
    assert response.status_code == 409


@pytest.mark.django_db
def test_the_bulk_panel_requests_changes_on_the_selected_with_one_comment(inbox: Client) -> None:
    one, two = make_candidate(), make_candidate()
    response = inbox.post(
        reverse("review:bulk"),
        {
            "decision": "request_changes",
            "reason": "Add the failing command.",
            "item": [f"{one.pk}:1", f"{two.pk}:1"],
        },
    )
    assert response.status_code == 303
    assert set(Candidate.objects.values_list("status", flat=True)) == {"changes_requested"}
    assert set(ReviewAction.objects.values_list("reason", flat=True)) == {"Add the failing command."}
    listed = inbox.get(reverse("review:queue"), {"status": "changes_requested"}).content.decode()
    assert f'data-pk="{one.pk}"' in listed and f'data-pk="{two.pk}"' in listed


@pytest.mark.django_db
def test_the_candidate_page_shows_the_answer_as_a_diff_in_the_thread(inbox: Client) -> None:
    candidate = make_candidate(proposal=experience_proposal(action="reran the job"))
    request_changes(candidate, make_reviewer("carol"))
    answer(candidate, 1, proposal=experience_proposal(action="pinned pip-tools to 7.4.1 and reran the job"))
    html = inbox.get(reverse("review:candidate", args=[candidate.pk])).content.decode()
    assert 'data-thread-version="2"' in html and "data-thread-diff" in html
    assert html.index("Name the resolver.") < html.index('data-thread-version="2"')
