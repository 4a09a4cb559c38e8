"""Review Inbox pages through Django's test client: permissions, filters, counts, actions, conflicts,
escaping, history and query counts."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import time_machine
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from powercontext.core import families
from powercontext.core.models import ArtifactRevision
from review import diff
from review import services as review_services
from review.models import Candidate, CandidateVersion, ReviewDecision
from review.selectors import counts as count_selectors
from review.selectors import queue as queue_selectors
from review.selectors.similar import forget_digests
from tests.powercontext.factories import make_memory
from tests.review.conftest import (
    PASSWORD,
    approve,
    experience,
    make_candidate,
    make_source,
    make_update_candidate,
    make_user,
    result_ref,
    revise,
    skill,
)

pytestmark = pytest.mark.django_db

MARKER = "BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1"
SCRIPT = "<script>alert('pwned')</script>"


def url(name: str, candidate: Candidate | None = None) -> str:
    from django.urls import reverse

    return reverse(f"review:{name}", args=[candidate.pk] if candidate is not None else [])


def client_for(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def text_of(response: Any) -> str:
    return response.content.decode()


def refresh(candidate: Candidate) -> Candidate:
    return Candidate.objects.select_related("latest").get(pk=candidate.pk)


# --- who may do what --------------------------------------------------------------------------


@pytest.mark.parametrize("page", ["queue", "candidate", "history", "revise"])
def test_anonymous_users_are_sent_to_the_login_page(page: str) -> None:
    candidate = make_candidate()
    path = url(page) if page == "queue" else url(page, candidate)
    response = Client().get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")


@pytest.mark.parametrize("action", ["approve", "reject", "revise"])
def test_anonymous_posts_change_nothing(action: str) -> None:
    candidate = make_candidate()
    response = Client().post(url(action, candidate), {"expected_version": 1, "reason": "no"})
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert refresh(candidate).status == Candidate.Status.PENDING


def test_a_deactivated_account_gets_no_access(outsider: User) -> None:
    candidate = make_candidate()
    client = client_for(outsider)
    assert client.get(url("queue"))["Location"].startswith("/accounts/login/")
    assert client.post(url("approve", candidate), {"expected_version": 1}).status_code == 302
    assert refresh(candidate).status == Candidate.Status.PENDING


def test_a_viewer_reads_the_queue_and_candidates_without_action_buttons(viewer: User) -> None:
    candidate = make_candidate()
    client = client_for(viewer)
    queue = client.get(url("queue"))
    assert queue.status_code == 200
    assert url("candidate", candidate) in text_of(queue)
    page = client.get(url("candidate", candidate))
    assert page.status_code == 200
    body = text_of(page)
    assert 'id="approve-form"' not in body
    assert 'id="reject-form"' not in body
    assert url("revise", candidate) not in body
    assert "Read-only" in body
    assert client.get(url("history", candidate)).status_code == 200


@pytest.mark.parametrize(
    ("action", "data"),
    [
        ("approve", {"expected_version": 1}),
        ("reject", {"expected_version": 1, "reason": "Not useful."}),
        ("revise", {"expected_version": 1, **experience()}),
    ],
)
def test_a_viewer_is_forbidden_to_act(viewer: User, action: str, data: dict[str, Any]) -> None:
    candidate = make_candidate()
    response = client_for(viewer).post(url(action, candidate), data)
    assert response.status_code == 403
    assert "can’t do that" in text_of(response)
    candidate = refresh(candidate)
    assert (candidate.status, candidate.version) == (Candidate.Status.PENDING, 1)
    assert not ReviewDecision.objects.exists()


def test_a_viewer_cannot_open_the_revise_form(viewer: User) -> None:
    candidate = make_candidate()
    assert client_for(viewer).get(url("revise", candidate)).status_code == 403


def test_a_reviewer_sees_the_actions(reviewer: User) -> None:
    candidate = make_candidate()
    body = text_of(client_for(reviewer).get(url("candidate", candidate)))
    assert 'id="approve-form"' in body
    assert 'id="reject-form"' in body
    assert url("revise", candidate) in body
    assert 'name="expected_version" value="1"' in body
    for key in ("a", "r", "e", "h", "u"):
        assert f'data-key="{key}"' in body


def test_login_and_logout_round_trip(reviewer: User) -> None:
    client = Client(enforce_csrf_checks=True)
    page = client.get("/accounts/login/?next=/review/")
    assert page.status_code == 200
    token = client.cookies["csrftoken"].value
    response = client.post(
        "/accounts/login/",
        {"username": "reviewer", "password": PASSWORD, "next": "/review/", "csrfmiddlewaretoken": token},
    )
    assert (response.status_code, response["Location"]) == (302, "/review/")
    assert client.get("/review/").status_code == 200
    token = client.cookies["csrftoken"].value
    response = client.post("/accounts/logout/", {"csrfmiddlewaretoken": token})
    assert (response.status_code, response["Location"]) == (302, "/accounts/login/")
    assert client.get("/review/").status_code == 302


def test_a_wrong_password_shows_an_error(reviewer: User) -> None:
    response = Client().post("/accounts/login/", {"username": "reviewer", "password": "nope"})
    assert response.status_code == 200
    assert "errorlist" in text_of(response)


def test_an_unknown_candidate_is_an_html_404(reviewer: User) -> None:
    for name in ("candidate", "history", "revise"):
        from django.urls import reverse

        response = client_for(reviewer).get(reverse(f"review:{name}", args=[987654]))
        assert response.status_code == 404
        assert "No such candidate" in text_of(response)


# --- actions ------------------------------------------------------------------------------------


def _csrf_client(user: User, candidate: Candidate) -> tuple[Client, str]:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    page = client.get(url("candidate", candidate))
    assert page.status_code == 200
    return client, client.cookies["csrftoken"].value


def test_a_reviewer_approves_through_a_csrf_checked_form(reviewer: User) -> None:
    candidate = make_candidate()
    client, token = _csrf_client(reviewer, candidate)
    response = client.post(url("approve", candidate), {"expected_version": 1, "csrfmiddlewaretoken": token})
    assert response.status_code == 302
    candidate = refresh(candidate)
    assert candidate.status == Candidate.Status.APPROVED
    revision = ArtifactRevision.objects.get(head=candidate.result_head)
    assert revision.content == candidate.latest.proposal
    assert revision.created_by == reviewer
    decision = ReviewDecision.objects.get(candidate=candidate)
    assert (decision.decision, decision.reviewer, decision.version) == ("approved", reviewer, 1)
    followed = client.get(response["Location"])
    assert f"Approved candidate #{candidate.pk}" in text_of(followed)


def test_a_post_without_the_csrf_token_is_refused(reviewer: User) -> None:
    candidate = make_candidate()
    client, _ = _csrf_client(reviewer, candidate)
    response = client.post(url("approve", candidate), {"expected_version": 1})
    assert response.status_code == 403
    assert refresh(candidate).status == Candidate.Status.PENDING


def test_after_a_decision_the_reviewer_lands_on_the_next_candidate_of_the_same_queue(reviewer: User) -> None:
    first = make_candidate(family="skill")
    make_candidate(family="experience")
    third = make_candidate(family="skill")
    client = client_for(reviewer)
    response = client.post(url("approve", first) + "?family=skill", {"expected_version": 1})
    assert response["Location"] == url("candidate", third) + "?family=skill"
    response = client.post(
        url("reject", third) + "?family=skill", {"expected_version": 1, "reason": "Duplicate."}
    )
    assert response["Location"] == url("queue") + "?family=skill"


def test_a_reviewer_rejects_with_a_reason(reviewer: User) -> None:
    candidate = make_candidate()
    client, token = _csrf_client(reviewer, candidate)
    response = client.post(
        url("reject", candidate),
        {"expected_version": 1, "reason": "Too specific to\r\none incident.", "csrfmiddlewaretoken": token},
    )
    assert response.status_code == 302
    candidate = refresh(candidate)
    assert candidate.status == Candidate.Status.REJECTED
    assert candidate.decision_reason == "Too specific to\none incident."
    assert candidate.result_head is None
    assert not ArtifactRevision.objects.filter(family="experience").exists()


@pytest.mark.parametrize("reason", ["", "   \n  ", "x" * 2001])
def test_a_reject_needs_a_reason_of_at_most_2000_characters(reviewer: User, reason: str) -> None:
    candidate = make_candidate()
    client = client_for(reviewer)
    response = client.post(url("reject", candidate), {"expected_version": 1, "reason": reason})
    assert (response.status_code, response["Location"]) == (303, url("candidate", candidate))
    assert 'class="errorlist"' in text_of(client.get(response["Location"]))
    assert refresh(candidate).status == Candidate.Status.PENDING


def test_an_action_without_a_version_is_a_form_error(reviewer: User) -> None:
    candidate = make_candidate()
    client = client_for(reviewer)
    response = client.post(url("approve", candidate), {"expected_version": "x"})
    assert response.status_code == 303
    assert 'class="errorlist"' in text_of(client.get(response["Location"]))
    assert refresh(candidate).status == Candidate.Status.PENDING


def test_the_revise_form_starts_from_the_current_version(reviewer: User) -> None:
    candidate = make_candidate(proposal=experience(lesson="Keep <migrations> small."))
    response = client_for(reviewer).get(url("revise", candidate))
    assert response.status_code == 200
    body = text_of(response)
    assert "Keep &lt;migrations&gt; small." in body
    assert 'name="expected_version" value="1"' in body
    assert "Save version 2" in body


def test_a_revise_creates_the_next_version_and_keeps_the_evidence(reviewer: User) -> None:
    candidate = make_candidate()
    before = candidate.latest
    client, token = _csrf_client(reviewer, candidate)
    data = {
        **experience(lesson="Batch migrations;\r\nnever lock a hot table."),
        "reason": "Sharper lesson.",
        "expected_version": 1,
        "csrfmiddlewaretoken": token,
    }
    response = client.post(url("revise", candidate), data)
    assert (response.status_code, response["Location"]) == (302, url("candidate", candidate))
    candidate = refresh(candidate)
    assert (candidate.version, candidate.status) == (2, Candidate.Status.PENDING)
    latest = candidate.latest
    assert latest.proposal["lesson"] == "Batch migrations;\nnever lock a hot table."
    assert (latest.source_refs, latest.artifact_refs, latest.target) == (
        before.source_refs,
        before.artifact_refs,
        before.target,
    )
    assert latest.reason == "Sharper lesson."
    assert latest.created_by == reviewer
    assert "Saved version 2" in text_of(client.get(response["Location"]))


def test_a_revise_with_a_blank_field_shows_the_error(reviewer: User) -> None:
    candidate = make_candidate()
    client = client_for(reviewer)
    response = client.post(url("revise", candidate), {**experience(lesson="   "), "expected_version": 1})
    assert response.status_code == 303
    assert "errorlist" in text_of(client.get(response["Location"]))
    assert refresh(candidate).version == 1


def test_a_skill_revise_takes_one_check_per_line(reviewer: User) -> None:
    candidate = make_candidate(family="skill")
    data = {
        "name": "Release checklist",
        "description": "Steps to cut a release.",
        "instructions": "Tag it.",
        "validation": "The tag exists\r\n\r\n  The changelog mentions it  \r\n",
        "expected_version": 1,
    }
    response = client_for(reviewer).post(url("revise", candidate), data)
    assert response.status_code == 302
    assert refresh(candidate).latest.proposal["validation"] == ["The tag exists", "The changelog mentions it"]


def test_a_skill_revise_reports_the_api_rules(reviewer: User) -> None:
    candidate = make_candidate(family="skill")
    data = {
        "name": "x" * 129,
        "description": "d",
        "instructions": "i",
        "validation": "",
        "expected_version": 1,
    }
    client = client_for(reviewer)
    response = client.post(url("revise", candidate), data)
    assert response.status_code == 303
    assert text_of(client.get(response["Location"])).count('class="errorlist"') >= 2


# --- conflicts ---------------------------------------------------------------------------------


def test_a_stale_approve_shows_the_newer_version_with_409(reviewer: User) -> None:
    candidate = make_candidate()
    revise(candidate, reviewer, lesson="The newer lesson from version two.")
    response = client_for(reviewer).post(url("approve", candidate), {"expected_version": 1})
    assert response.status_code == 409
    body = text_of(response)
    assert "changed while you were reviewing it" in body
    assert "version 2" in body
    assert "The newer lesson from version two." in body
    assert "What changed since version 1" in body
    assert refresh(candidate).status == Candidate.Status.PENDING


@pytest.mark.parametrize("action", ["reject", "revise"])
def test_stale_reject_and_revise_are_conflicts_too(reviewer: User, action: str) -> None:
    candidate = make_candidate()
    revise(candidate, reviewer, lesson="Changed meanwhile.")
    data = {"expected_version": 1, "reason": "No.", **experience()}
    response = client_for(reviewer).post(url(action, candidate), data)
    assert response.status_code == 409
    assert "Changed meanwhile." in text_of(response)
    assert refresh(candidate).version == 2


def test_acting_on_a_decided_candidate_is_a_conflict_not_a_500(reviewer: User) -> None:
    candidate = approve(make_candidate(), reviewer)
    client = client_for(reviewer)
    for action in ("approve", "reject", "revise"):
        response = client.post(
            url(action, candidate), {"expected_version": 1, "reason": "late", **experience()}
        )
        assert response.status_code == 409, action
        assert "already approved" in text_of(response)
    assert client.get(url("revise", candidate)).status_code == 409


def test_a_target_that_moved_on_is_a_conflict(reviewer: User) -> None:
    base = approve(make_candidate(), reviewer)
    first = make_update_candidate(base)
    second = make_update_candidate(base)
    approve(first, reviewer)
    client = client_for(reviewer)
    page = text_of(client.get(url("candidate", second)))
    assert "Approving it will be refused as a conflict" in page
    response = client.post(url("approve", second), {"expected_version": 1})
    assert response.status_code == 409
    body = text_of(response)
    assert "The target moved on" in body
    assert "is now at revision 2" in body
    assert refresh(second).status == Candidate.Status.PENDING


# --- evidence and diff ---------------------------------------------------------------------


def test_the_candidate_page_resolves_every_evidence_item(reviewer: User) -> None:
    memory = make_memory("repo", text="Use pg_repack for <bloated> tables.")
    assert memory.entry is not None
    base = approve(make_candidate(proposal=experience(lesson="An approved earlier lesson.")), reviewer)
    source = make_source("repo", content="Prompt: the nightly job <failed> again")
    make_source("other", content="Other scope content", source_id=source["source_id"])
    candidate = make_candidate(
        source_refs=[source],
        artifact_refs=[
            {"family": "memory", "artifact_id": "memory", "revision": memory.revision},
            result_ref(base),
        ],
    )
    body = text_of(client_for(reviewer).get(url("candidate", candidate)))
    assert "Prompt: the nightly job &lt;failed&gt; again" in body
    assert "Other scope content" not in body
    assert "Use pg_repack for &lt;bloated&gt; tables." in body
    assert memory.entry.entry_version_id in body
    assert "An approved earlier lesson." in body
    assert "Evidence <small>3 references</small>" in body


def test_a_target_candidate_shows_a_side_by_side_diff_against_the_current_revision(reviewer: User) -> None:
    base = approve(
        make_candidate(proposal=experience(lesson="Line one.\nLine two stays.\nLine <three>.")), reviewer
    )
    update = make_update_candidate(
        base, experience(lesson="Line one.\nLine two stays.\nLine <four>.\nA new line.")
    )
    body = text_of(client_for(reviewer).get(url("candidate", update)))
    assert "Update of" in body
    assert 'table class="diff"' in body
    assert "<del>three</del>" in body
    assert "<ins>four</ins>" in body
    assert "Line &lt;" in body
    assert "A new line." in body
    assert "Left: revision 1 (current)" in body


def test_a_field_too_large_to_diff_is_shown_whole_under_a_clear_notice(reviewer: User) -> None:
    old = "\n".join(f"a{n}" for n in range(diff.MAX_DIFF_LINES + 1))
    new = "\n".join(f"<{n}>" for n in range(diff.MAX_DIFF_LINES + 1))
    assert len(old) <= 8000 and len(new) <= 8000
    base = approve(make_candidate(proposal=experience(lesson=old)), reviewer)
    update = make_update_candidate(base, experience(lesson=new))

    body = text_of(client_for(reviewer).get(url("candidate", update)))

    assert "changed, too large to diff" in body
    assert "data-diff-too-large" in body
    assert 'table class="diff too-large"' in body
    assert "a999\na1000" in body and "&lt;999&gt;\n&lt;1000&gt;" in body


def test_the_side_by_side_diff_pairs_changed_lines_and_folds_long_unchanged_runs() -> None:
    old = "\n".join(f"line {n}" for n in range(1, 21))
    new = old.replace("line 10", "line ten").replace("line 20", "line 20\nline 21")
    rows = diff.side_by_side(old, new)
    kinds = [row.kind for row in rows]
    assert kinds.count("skip") == 2
    replaced = next(row for row in rows if row.kind == "replace")
    assert (replaced.left_no, replaced.right_no) == (10, 10)
    assert [s.text for s in replaced.right if s.changed] == ["ten"]
    inserted = [row for row in rows if row.kind == "insert"]
    assert [(row.right_no, row.right[0].text) for row in inserted] == [(21, "line 21")]
    assert diff.side_by_side("same", "same") == [
        diff.DiffRow("equal", 1, (diff.Segment("same", False),), 1, (diff.Segment("same", False),))
    ]
    assert [row.kind for row in diff.side_by_side("", "new")] == ["insert"]
    assert [row.kind for row in diff.side_by_side("old", "")] == ["delete"]


def test_fields_diff_keeps_the_family_order_and_marks_unchanged_fields() -> None:
    diffs = diff.fields_diff(
        families.EXPERIENCE.labels, {"lesson": "a", "situation": "s"}, {"lesson": "b", "situation": "s"}
    )
    assert [(d.name, d.changed) for d in diffs] == [
        ("situation", False),
        ("action", False),
        ("outcome", False),
        ("lesson", True),
    ]


# --- history ------------------------------------------------------------------------------


def test_the_history_page_lists_every_version_and_the_decision(reviewer: User) -> None:
    candidate = make_candidate(proposal=experience(lesson="First wording."))
    candidate = revise(candidate, reviewer, lesson="Second wording.")
    candidate = revise(candidate, reviewer, lesson="Third wording.")
    client = client_for(reviewer)
    client.post(url("reject", candidate), {"expected_version": 3, "reason": "Still too vague."})
    body = text_of(client.get(url("history", candidate)))
    assert body.count('data-history="version"') == 3
    assert 'data-history="decision"' in body
    assert "Rejected version 3" in body
    assert "Still too vague." in body
    for wording in ("First wording.", "Second wording.", "Third wording."):
        assert wording in body
    assert "Changes from version 2" in body
    assert "Changes from version 1" in body
    assert body.index("Version 3") < body.index("Version 1")


# --- escaping --------------------------------------------------------------------------------


def test_untrusted_text_renders_inert_everywhere(reviewer: User) -> None:
    hostile = f'{SCRIPT} {MARKER} "quoted" <img src=x onerror=alert(1)>'
    scope = "<b>scope</b>"
    source = make_source(scope, content=f"source says {SCRIPT}")
    candidate = make_candidate(
        scope, proposal=experience(lesson=hostile, situation=hostile), reason=hostile, source_refs=[source]
    )
    revise(candidate, reviewer, lesson=f"v2 {hostile}")
    client = client_for(reviewer)
    pages = [
        client.get(url("queue")),
        client.get(url("queue") + f"?q={MARKER}"),
        client.get(url("candidate", candidate)),
        client.get(url("history", candidate)),
        client.get(url("revise", candidate)),
        client.post(url("approve", candidate), {"expected_version": 1}),
    ]
    assert [p.status_code for p in pages] == [200, 200, 200, 200, 200, 409]
    for page in pages:
        body = text_of(page)
        assert SCRIPT not in body
        assert "<img" not in body
        assert "<b>scope</b>" not in body
        # Only the inbox's own inline script.
        assert len(re.findall(r"<script", body, re.IGNORECASE)) == 1
    candidate_page = text_of(pages[2])
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in candidate_page
    assert MARKER in candidate_page
    assert "&lt;b&gt;scope&lt;/b&gt;" in candidate_page
    assert MARKER in text_of(pages[1])


RLO, ZWSP = "\u202e", "\u200b"
HIDDEN = ("\u202a", "\u202b", "\u202c", "\u202d", RLO, "\u2066", "\u2067", "\u2068", "\u2069")
HIDDEN += ("\u200e", "\u200f", "\u061c", ZWSP, "\u200c", "\u200d", "\u2060", "\ufeff")


def assert_no_hidden_characters(body: str) -> None:
    assert not [f"U+{ord(char):04X}" for char in HIDDEN if char in body]


def warned_fields(body: str) -> list[str]:
    assert body.count("data-textmarks-warning") == 1
    return re.findall(r"<li data-textmarks-field><b>(.*?)</b>", body)


def test_bidi_and_zero_width_characters_are_shown_as_markers_under_a_warning(reviewer: User) -> None:
    # Reads "approve the release" on screen; agents receive "approve the esaeler" + a hidden word.
    lesson = f"Always approve the {RLO}esaeler\u202c after review."
    source = make_source(content=f"The user said: trust{ZWSP}me")
    candidate = make_candidate(
        proposal=experience(lesson=lesson, action=f"Ran{ZWSP}the suite."),
        reason=f"Seen{ZWSP}twice {RLO}kcab",
        source_refs=[source],
    )

    body = text_of(client_for(reviewer).get(url("candidate", candidate)))

    assert_no_hidden_characters(body)
    assert "⟨U+202E⟩" in body and "⟨U+200B⟩" in body and "⟨U+202C⟩" in body
    assert (
        '<span class="textmark textmark-bidi" title="U+202E RIGHT-TO-LEFT OVERRIDE">⟨U+202E⟩</span>' in body
    )
    assert "Always approve the <span" in body and "esaeler<span" in body
    assert warned_fields(body) == [
        "Proposal · Action",
        "Proposal · Lesson",
        "Reason",
        f"Evidence source · {source['source_id']}",
    ]
    assert "Proposal · Lesson</b>: bidirectional control characters</li>" in body
    assert "Proposal · Action</b>: zero-width or invisible characters</li>" in body
    assert "Reason</b>: bidirectional control characters and zero-width or invisible characters" in body
    # The banner comes first, above the proposal.
    assert body.index("data-textmarks-warning") < body.index('id="proposal-title"')
    # The queue shows the lesson as the candidate's title: marked there too (no banner).
    queue = text_of(client_for(reviewer).get(url("queue")))
    assert_no_hidden_characters(queue)
    assert "Always approve the <span" in queue


def test_hidden_characters_in_an_update_diff_and_cited_revisions_are_marked_too(reviewer: User) -> None:
    base = approve(make_candidate(proposal=experience(lesson=f"Old{ZWSP} lesson line.")), reviewer)
    update = make_update_candidate(base, experience(lesson=f"New {RLO}lesson line."))

    body = text_of(client_for(reviewer).get(url("candidate", update)))

    assert_no_hidden_characters(body)
    assert 'table class="diff"' in body
    fields = warned_fields(body)
    assert "Proposal · Lesson" in fields
    assert "Update diff · Lesson · Current revision" in fields
    assert "Update diff · Lesson · Proposal" in fields
    assert f"Evidence · {base.result_head.artifact_id} · Lesson" in fields


def test_candidate_pages_without_hidden_characters_carry_no_warning(reviewer: User) -> None:
    candidate = make_candidate(proposal=experience(lesson="Right-to-left text is fine: שלום, مرحبا."))

    body = text_of(client_for(reviewer).get(url("candidate", candidate)))

    assert "data-textmarks-warning" not in body and '<span class="textmark' not in body
    assert "שלום, مرحبا." in body


def test_history_and_conflict_pages_mark_hidden_characters_too(reviewer: User) -> None:
    candidate = make_candidate(proposal=experience(lesson=f"First{ZWSP}wording."), reason=f"r{RLO}")
    candidate = revise(candidate, reviewer, lesson=f"Second {RLO}wording.")
    client = client_for(reviewer)

    history = text_of(client.get(url("history", candidate)))
    conflict = client.post(url("approve", candidate), {"expected_version": 1})

    assert conflict.status_code == 409
    for body in (history, text_of(conflict)):
        assert_no_hidden_characters(body)
        assert "⟨U+202E⟩" in body and warned_fields(body)


# --- queue, filters, counts, paging ---------------------------------------------------------


def rows_of(response: Any) -> list[int]:
    return [int(pk) for pk in re.findall(r'<td class="num">(\d+)</td>', text_of(response))]


def test_the_queue_lists_pending_candidates_oldest_first_with_counts(viewer: User, reviewer: User) -> None:
    first = make_candidate()
    second = make_candidate(family="skill")
    third = make_candidate()
    decided = approve(make_candidate(), reviewer)
    response = client_for(viewer).get(url("queue"))
    assert rows_of(response) == [first.pk, second.pk, third.pk]
    body = text_of(response)
    assert '<b data-count="experience">2</b>' in body
    assert '<b data-count="skill">1</b>' in body
    assert '<b data-count="matching">3</b>' in body
    assert decided.pk not in rows_of(response)


def test_decided_candidates_are_listed_newest_first(reviewer: User) -> None:
    first = approve(make_candidate(), reviewer)
    second = approve(make_candidate(), reviewer)
    make_candidate()
    assert rows_of(client_for(reviewer).get(url("queue") + "?status=approved")) == [second.pk, first.pk]


def test_the_family_filter(viewer: User) -> None:
    make_candidate()
    wanted = make_candidate(family="skill")
    assert rows_of(client_for(viewer).get(url("queue") + "?family=skill")) == [wanted.pk]


def test_the_scope_filter_matches_a_prefix_whatever_the_case(viewer: User) -> None:
    lower = make_candidate("repo")
    upper = make_candidate("Repo")
    other = make_candidate("repository-2")
    make_candidate("acme/repo")
    client = client_for(viewer)
    assert rows_of(client.get(url("queue") + "?scope=repo")) == [lower.pk, upper.pk, other.pk]
    assert rows_of(client.get(url("queue") + "?scope=REPOS")) == [other.pk]
    assert rows_of(client.get(url("queue") + "?scope=rep%25")) == []
    assert rows_of(client.get(url("queue") + "?scope=epo")) == []


def test_the_text_filter_searches_proposals_reasons_and_ids(viewer: User) -> None:
    by_lesson = make_candidate(proposal=experience(lesson="Cache the Docker layers in CI."))
    by_reason = make_candidate(reason="Reported by the DOCKER on-call.")
    by_skill = make_candidate(family="skill", proposal=skill(instructions="Run docker compose up."))
    unicode_text = make_candidate(proposal=experience(outcome="Le café était fermé."))
    make_candidate()
    client = client_for(viewer)
    assert rows_of(client.get(url("queue") + "?q=docker")) == [by_lesson.pk, by_reason.pk, by_skill.pk]
    assert rows_of(client.get(url("queue") + "?q=café")) == [unicode_text.pk]
    assert rows_of(client.get(url("queue") + f"?q={by_skill.candidate_id}")) == [by_skill.pk]


def test_the_age_filter(viewer: User) -> None:
    with time_machine.travel(timezone.now() - timedelta(days=10)):
        old = make_candidate()
    with time_machine.travel(timezone.now() - timedelta(hours=5)):
        recent = make_candidate()
    fresh = make_candidate()
    client = client_for(viewer)
    assert rows_of(client.get(url("queue") + "?age=lt1h")) == [fresh.pk]
    assert rows_of(client.get(url("queue") + "?age=lt1d")) == [recent.pk, fresh.pk]
    assert rows_of(client.get(url("queue") + "?age=gt7d")) == [old.pk]
    assert rows_of(client.get(url("queue") + "?age=gt1d")) == [old.pk]


@pytest.mark.parametrize(
    "params",
    [{"family": "bogus"}, {"status": "deleted"}, {"age": "forever"}, {"q": "a\x00b"}, {"scope": "s" * 257}],
)
def test_an_invalid_filter_shows_an_error_and_no_rows(viewer: User, params: dict[str, str]) -> None:
    make_candidate()
    response = client_for(viewer).get(url("queue"), params)
    assert response.status_code == 200
    assert rows_of(response) == []
    assert "errorlist" in text_of(response)


def test_filters_are_kept_on_candidate_links_and_next(viewer: User) -> None:
    first = make_candidate(family="skill")
    make_candidate()
    second = make_candidate(family="skill")
    client = client_for(viewer)
    assert url("candidate", first) + "?family=skill" in text_of(client.get(url("queue") + "?family=skill"))
    page = text_of(client.get(url("candidate", first) + "?family=skill"))
    assert f'href="{url("candidate", second)}?family=skill" data-key="n"' in page


def test_counts_are_capped(viewer: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(count_selectors, "COUNT_CAP", 2)
    for _ in range(3):
        make_candidate()
    body = text_of(client_for(viewer).get(url("queue")))
    assert '<b data-count="experience">2+</b>' in body
    assert '<b data-count="matching">2+</b>' in body


def test_the_queue_pages_by_keyset(viewer: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queue_selectors, "PAGE_SIZE", 2)
    pks = [make_candidate(family="skill" if n in (1, 2) else "experience").pk for n in range(5)]
    client = client_for(viewer)
    first = client.get(url("queue"))
    assert rows_of(first) == pks[:2]
    assert 'rel="prev"' not in text_of(first)
    second = client.get(url("queue") + f"?after={pks[1]}")
    assert rows_of(second) == pks[2:4]
    third = client.get(url("queue") + f"?after={pks[3]}")
    assert rows_of(third) == pks[4:]
    assert 'rel="next"' not in text_of(third)
    back = client.get(url("queue") + f"?before={pks[2]}")
    assert rows_of(back) == pks[:2]
    for junk in ("abc", "²", "-1", "9" * 40):
        assert rows_of(client.get(url("queue"), {"after": junk})) == pks[:2]


# --- query counts -------------------------------------------------------------------------


def _queries(client: Client, path: str) -> int:
    """Queries of one GET, from a cold near-duplicate cache (review.selectors.similar reads the
    pending versions it has not seen yet in one query), so counts never depend on test order."""
    forget_digests()
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path)
    assert response.status_code == 200
    return len(captured.captured_queries)


def test_the_queue_costs_the_same_queries_for_10_and_200_candidates(reviewer: User) -> None:
    client = client_for(reviewer)
    other = make_user("other-reviewer", reviewer=True)

    def make(n: int) -> None:
        # Every other row claimed, by either reviewer: claimants are joined, never fetched per row.
        candidate = make_candidate()
        if n % 2:
            review_services.candidate_claim(
                scope_id=candidate.scope_id,
                candidate_id=candidate.candidate_id,
                reviewer=reviewer if n % 4 == 1 else other,
                expected_claimant=None,
            )

    for n in range(10):
        make(n)
    small = _queries(client, url("queue"))
    small_filtered = _queries(client, url("queue") + "?family=experience&q=migration&age=lt1d")
    small_mine = _queries(client, url("queue") + "?assigned=me")
    for n in range(10, 200):
        make(n)
    assert Candidate.objects.count() == 200
    large = _queries(client, url("queue"))
    assert large == small
    assert _queries(client, url("queue") + "?family=experience&q=migration&age=lt1d") == small_filtered
    assert _queries(client, url("queue") + "?assigned=me") == small_mine
    assert _queries(client, url("queue") + f"?after={Candidate.objects.order_by('pk')[60].pk}") == small
    # Session, user, permissions (2), two capped family counts, the capped matching count, the
    # page (one query per family; one in all with a family filter), the canned reasons, the
    # scope suggestions, the capped count of reported items (the "Reported" link) and, for the
    # near-duplicate flag, the pending scan (stored term sketches, Experiences and Skills in
    # one), the approved Experience heads' sizes, their content (read even when there are none,
    # so the count stays the same at any size) and the approved Skills.
    assert small == 16, small
    assert _queries(client, url("queue") + "?family=skill") == 11


def test_the_candidate_page_costs_the_same_queries_for_3_and_11_evidence_items(reviewer: User) -> None:
    client = client_for(reviewer)
    memories = [make_memory("repo", text=f"memory fact {n}") for n in range(4)]
    base = approve(make_candidate(), reviewer)

    def memory_ref(n: int) -> dict[str, Any]:
        return {"family": "memory", "artifact_id": "memory", "revision": memories[n].revision}

    few = make_candidate(source_refs=[make_source()], artifact_refs=[memory_ref(0), result_ref(base)])
    many = make_candidate(
        source_refs=[make_source() for _ in range(6)],
        artifact_refs=[memory_ref(n) for n in range(4)] + [result_ref(base)],
    )
    assert len(many.latest.source_refs) + len(many.latest.artifact_refs) == 11
    assert _queries(client, url("candidate", few)) == _queries(client, url("candidate", many))
    one_source = make_candidate(source_refs=[make_source()])
    six_sources = make_candidate(source_refs=[make_source() for _ in range(6)])
    assert _queries(client, url("candidate", one_source)) == _queries(client, url("candidate", six_sources))
    # A target adds its head lookup and nothing per field.
    target = make_update_candidate(base)
    assert _queries(client, url("candidate", target)) <= _queries(client, url("candidate", many))


def test_the_history_page_costs_the_same_queries_for_1_and_5_versions(reviewer: User) -> None:
    client = client_for(reviewer)
    one = make_candidate()
    many = make_candidate()
    for n in range(4):
        many = revise(many, reviewer, lesson=f"wording {n}")
    assert CandidateVersion.objects.filter(candidate=many).count() == 5
    assert _queries(client, url("history", one)) == _queries(client, url("history", many))


def test_decided_candidates_page_newest_first(reviewer: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queue_selectors, "PAGE_SIZE", 2)
    pks = [approve(make_candidate(family="skill" if n % 2 else "experience"), reviewer).pk for n in range(5)]
    client = client_for(reviewer)
    newest = list(reversed(pks))
    assert rows_of(client.get(url("queue") + "?status=approved")) == newest[:2]
    assert rows_of(client.get(url("queue") + f"?status=approved&after={newest[1]}")) == newest[2:4]
    assert rows_of(client.get(url("queue") + f"?status=approved&after={newest[3]}")) == newest[4:]
    assert rows_of(client.get(url("queue") + f"?status=approved&before={newest[2]}")) == newest[:2]
    page = text_of(client.get(url("candidate", Candidate.objects.get(pk=newest[1])) + "?status=approved"))
    assert (
        f'href="{url("candidate", Candidate.objects.get(pk=newest[2]))}?status=approved" data-key="n"' in page
    )
    assert (
        f'href="{url("candidate", Candidate.objects.get(pk=newest[0]))}?status=approved" data-key="p"' in page
    )


# --- issue 13 bugs ---------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["approve", "reject"])
def test_an_expired_session_leads_back_to_the_candidate_page_not_the_post_only_url(action: str) -> None:
    candidate = make_candidate()
    response = Client().post(url(action, candidate) + "?family=experience", {"expected_version": 1})
    assert response.status_code == 302
    location = urlsplit(response["Location"])
    assert location.path == "/accounts/login/"
    assert parse_qs(location.query) == {"next": [f"{url('candidate', candidate)}?family=experience"]}


@pytest.mark.parametrize("action", ["approve", "reject"])
def test_a_get_of_an_action_url_goes_to_the_candidate_page(reviewer: User, action: str) -> None:
    candidate = make_candidate()
    response = client_for(reviewer).get(url(action, candidate) + "?family=experience")
    assert (response.status_code, response["Location"]) == (
        302,
        url("candidate", candidate) + "?family=experience",
    )
    assert refresh(candidate).status == Candidate.Status.PENDING


def test_a_csrf_failure_on_an_action_explains_links_back_and_keeps_the_typed_reason(reviewer: User) -> None:
    candidate = make_candidate()
    client, _ = _csrf_client(reviewer, candidate)
    response = client.post(
        url("reject", candidate) + "?family=experience",
        {"expected_version": 1, "reason": "Too vague <b>to</b> help.", "csrfmiddlewaretoken": "stale"},
        HTTP_SEC_FETCH_SITE="same-origin",  # typed on our own page (another site's form gets no echo)
    )
    assert response.status_code == 403
    body = text_of(response)
    assert "CSRF verification failed" not in body
    assert "signed in again" in body
    assert f'href="{url("candidate", candidate)}?family=experience"' in body
    assert "Too vague &lt;b&gt;to&lt;/b&gt; help." in body
    assert refresh(candidate).status == Candidate.Status.PENDING


def test_a_csrf_failure_elsewhere_links_to_the_inbox(reviewer: User) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    response = client.post("/accounts/logout/", {})
    assert response.status_code == 403
    assert 'href="/review/"' in text_of(response)


def test_a_decided_update_diffs_against_the_revision_it_replaced(reviewer: User) -> None:
    base = approve(make_candidate(proposal=experience(lesson="The old <lesson>.")), reviewer)
    update = approve(make_update_candidate(base, experience(lesson="The new <lesson>.")), reviewer)
    body = text_of(client_for(reviewer).get(url("candidate", update)))
    assert "refused as a conflict" not in body
    assert "<del>old</del>" in body
    assert "<ins>new</ins>" in body
    assert "Revision 1 (replaced)" in body
    rejected = make_update_candidate(update, experience(lesson="A rejected <lesson>."))
    client_for(reviewer).post(url("reject", rejected), {"expected_version": 1, "reason": "No."})
    approve(make_update_candidate(update), reviewer)  # the head moves on past revision 2
    body = text_of(client_for(reviewer).get(url("candidate", rejected)))
    assert "refused as a conflict" not in body
    assert "<ins>rejected</ins>" in body
    assert "Revision 2 (its target)" in body


def test_an_invalid_reject_redirects_to_the_candidate_page_with_the_errors_and_the_text(
    reviewer: User,
) -> None:
    candidate = make_candidate()
    client = client_for(reviewer)
    response = client.post(
        url("reject", candidate) + "?family=experience", {"expected_version": 1, "reason": "x" * 2001}
    )
    assert (response.status_code, response["Location"]) == (
        303,
        url("candidate", candidate) + "?family=experience",
    )
    page = text_of(client.get(response["Location"]))
    assert 'class="errorlist"' in page
    assert "x" * 2001 in page
    again = text_of(client.get(response["Location"]))  # a reload shows the plain page
    assert 'class="errorlist"' not in again
    assert refresh(candidate).status == Candidate.Status.PENDING


def test_an_invalid_revise_redirects_to_the_revise_page_with_the_errors_and_the_text(
    reviewer: User,
) -> None:
    candidate = make_candidate()
    client = client_for(reviewer)
    data = {**experience(lesson="   ", outcome="Kept <typed> outcome."), "expected_version": 1}
    response = client.post(url("revise", candidate), data)
    assert (response.status_code, response["Location"]) == (303, url("revise", candidate))
    page = text_of(client.get(response["Location"]))
    assert 'class="errorlist"' in page
    assert "Kept &lt;typed&gt; outcome." in page
    assert 'class="errorlist"' not in text_of(client.get(response["Location"]))
    assert refresh(candidate).version == 1


def test_the_conflict_page_reads_well_without_a_version(reviewer: User) -> None:
    candidate = approve(make_candidate(), reviewer)
    body = text_of(client_for(reviewer).get(url("revise", candidate)))
    assert f"You tried to <b>revise</b> candidate #{candidate.pk}." in body


@pytest.mark.parametrize(
    ("refs", "text"), [(1, "its 1 evidence reference is kept"), (2, "its 2 evidence references are kept")]
)
def test_the_revise_page_agrees_in_number(reviewer: User, refs: int, text: str) -> None:
    candidate = make_candidate(source_refs=[make_source() for _ in range(refs)])
    assert text in text_of(client_for(reviewer).get(url("revise", candidate)))


def test_an_invalid_age_is_reported_by_its_name(viewer: User) -> None:
    body = text_of(client_for(viewer).get(url("queue") + "?age=zzz"))
    assert "[invalid name]" not in body
    assert "Age: " in body


def test_an_unknown_status_does_not_claim_to_list_pending_candidates(viewer: User) -> None:
    body = text_of(client_for(viewer).get(url("queue") + "?status=deleted"))
    assert "Pending candidates" not in body
    assert "<h1>Candidates</h1>" in body


# --- the update path: rebase a stale update ----------------------------------------------------


def _stale_update(reviewer: User, *, conflicting: bool = False) -> tuple[Candidate, Candidate]:
    """Two updates of revision 1: the first approved (revision 2 adds a sentence to the outcome),
    the other still targeting revision 1 (it rewrites the lesson; with ``conflicting``, the
    outcome too)."""
    proposal = experience(lesson="Revision one <lesson>.")
    base = approve(make_candidate(proposal=proposal), reviewer)
    first = make_update_candidate(
        base, {**proposal, "outcome": proposal["outcome"] + " Revision two adds this."}
    )
    changes = {"lesson": "The stale proposal <lesson>."}
    if conflicting:
        changes["outcome"] = "A different outcome."
    stale = make_update_candidate(base, {**proposal, **changes})
    return approve(first, reviewer), stale


def test_a_stale_update_offers_a_rebase_and_disables_approve(reviewer: User) -> None:
    _, stale = _stale_update(reviewer)
    body = text_of(client_for(reviewer).get(url("candidate", stale)))
    assert "Rebase onto revision 2" in body
    assert re.search(r'<button type="submit" class="btn primary block" disabled[^>]*>Approve version 1', body)
    assert 'data-key="a"' not in body
    # The diff card comes before the proposal.
    assert body.index("Update of") < body.index("Proposal <small>")


def test_a_rebase_retargets_to_the_current_head_and_then_approves(reviewer: User) -> None:
    moved, stale = _stale_update(reviewer)
    client = client_for(reviewer)
    response = client.post(
        url("rebase", stale) + "?family=experience", {"expected_version": 1, "revision": 2}
    )
    assert response["Location"] == url("candidate", stale) + "?family=experience"
    stale = refresh(stale)
    assert stale.version == 2
    assert stale.latest.target == {**result_ref(moved), "revision": 2}
    assert stale.latest.artifact_refs == [stale.latest.target]
    assert stale.latest.proposal["lesson"] == "The stale proposal <lesson>."
    assert stale.latest.proposal["outcome"].endswith(" Revision two adds this.")  # merged in
    assert stale.latest.created_by == reviewer
    body = text_of(client.get(response["Location"]))
    assert "Rebased candidate" in body and "Rebase onto" not in body
    assert "<del>Revision one</del>" in body or "<del>Revision</del>" in body  # diffed against revision 2
    assert "<del>Revision two adds this.</del>" not in body  # revision 2's sentence is kept
    assert client.post(url("approve", stale), {"expected_version": 2}).status_code == 302
    stale = refresh(stale)
    assert stale.result_revision == 3
    content = ArtifactRevision.objects.get(head=stale.result_head, revision=3).content
    assert content["outcome"].endswith(" Revision two adds this.")
    assert content["lesson"] == "The stale proposal <lesson>."


def test_a_conflicting_rebase_is_refused_and_sends_to_the_conflict_editor(reviewer: User) -> None:
    _, stale = _stale_update(reviewer, conflicting=True)
    client = client_for(reviewer)
    response = client.post(url("rebase", stale), {"expected_version": 1, "revision": 2})
    assert response.status_code == 302
    assert response["Location"] == url("merge", stale)  # the conflict editor: test_merge_editor.py
    assert refresh(stale).version == 1  # nothing was written
    assert "both changed outcome" in text_of(client.get(response["Location"]))
    # The revise page never retargets (issue 32: tests/review/test_retarget.py).
    assert "onto_revision" not in text_of(client.get(url("revise", stale) + "?onto=2&conflicts=outcome"))


def test_a_rebase_onto_a_revision_that_is_no_longer_the_head_is_a_conflict(reviewer: User) -> None:
    moved, stale = _stale_update(reviewer)
    approve(make_update_candidate(moved), reviewer)  # the head is at 3 now
    response = client_for(reviewer).post(url("rebase", stale), {"expected_version": 1, "revision": 2})
    assert response.status_code == 409
    assert "The target moved on" in text_of(response)
    assert refresh(stale).version == 1


def test_a_rebase_of_a_candidate_without_a_target_changes_nothing(reviewer: User, viewer: User) -> None:
    candidate = make_candidate()
    client = client_for(reviewer)
    response = client.post(url("rebase", candidate), {"expected_version": 1, "revision": 2})
    assert "Only an update" in text_of(client.get(response["Location"]))
    assert (
        client_for(viewer).post(url("rebase", candidate), {"expected_version": 1, "revision": 2}).status_code
        == 403
    )
    assert refresh(candidate).version == 1
