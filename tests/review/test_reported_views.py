"""Reported items in the Review Inbox (issue 30, "A person decides"), through Django's test
client: the list holds only current items with open reports; an item's page shows what the
reporters saw, every report and decision; Retire, Revise (a Memory entry's text, an Experience's
update proposed into the queue), Dismiss and Undo each write one ``ReportDecision`` and change
what prepare returns; refused decisions say why (never a 500); permissions; query counts."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from powercontext.core.models import ApiToken
from powercontext.core.tokens import api_token_create
from powercontext.feedback.models import Feedback, FeedbackCounter, ReportDecision
from powercontext.feedback.prior import experience_target, memory_target
from powercontext.feedback.services import FeedbackItem, feedback_record
from powercontext.memory import services as memory_services
from review.models import Candidate
from tests.feedback.helpers import items_of, prepare
from tests.review.conftest import approve, make_candidate, make_user, result_ref
from tests.review.test_inbox_views import client_for, text_of

pytestmark = pytest.mark.django_db

SCOPE = "repo"
QUERY = "which port does the staging database listen on?"
STALE = "The staging database listens on port 6543."
NEW = "The staging database listens on port 5433 since the December move."
PAYLOAD = "<script>alert('reported')</script>"
LESSON = "Read the staging database port from deploy/staging.env before connecting."
EXPERIENCE = {
    "situation": "The staging database port changed during the December move.",
    "action": "Checked which port the staging database listens on.",
    "outcome": "Connections on the old port failed.",
    "lesson": LESSON,
}


# --- factories ------------------------------------------------------------------------------------------


def remember(text: str = STALE, scope_id: str = SCOPE) -> dict[str, Any]:
    """Remember ``text``; return the citation prepare would give for it."""
    mutation = memory_services.memory_remember(scope_id=scope_id, kind="note", text=text)
    assert mutation.entry is not None
    return {
        "memory_ref": {"family": "memory", "artifact_id": "memory", "revision": mutation.revision},
        "entry_id": mutation.entry.entry_id,
        "entry_version_id": mutation.entry.entry_version_id,
    }


def experience_citation(reviewer: User, **changes: str) -> dict[str, Any]:
    approved = approve(make_candidate(SCOPE, proposal={**EXPERIENCE, **changes}), reviewer)
    return {"artifact_ref": result_ref(approved)}


def agent(name: str) -> tuple[ApiToken, str]:
    """An agent's token (its own user); returns the row and its secret."""
    return api_token_create(user=make_user(f"user-{name}"), name=name)


def report(
    citation: dict[str, Any],
    outcome: str,
    token: ApiToken | None,
    note: str = "",
    now: datetime | None = None,
    scope_id: str = SCOPE,
) -> None:
    feedback_record(
        scope_id=scope_id,
        items=[FeedbackItem(citation=citation, outcome=outcome, note=note)],
        token=token,
        now=now,
    )


def target_of(citation: dict[str, Any]) -> str:
    if "memory_ref" in citation:
        return memory_target(citation["entry_version_id"])
    ref = citation["artifact_ref"]
    return experience_target(ref["artifact_id"], ref["revision"])


def counter(citation: dict[str, Any]) -> FeedbackCounter:
    return FeedbackCounter.objects.get(target=target_of(citation))


def item_url(citation: dict[str, Any], action: str = "") -> str:
    pk = counter(citation).pk
    return reverse(f"review:reported-{action}" if action else "review:reported-item", args=[pk])


def texts(api: Any) -> list[str]:
    """What prepare returns for the query, as agents get it."""
    return [str(item["content"]) for item in items_of(prepare(api, SCOPE, QUERY))]


def held_by_two(citation: dict[str, Any]) -> None:
    first, _ = agent("agent-a")
    second, _ = agent("agent-b")
    report(citation, "outdated", first, note="It moved to 5433.")
    report(citation, "outdated", second)


def newest_report(citation: dict[str, Any]) -> int:
    return int(Feedback.objects.filter(target=target_of(citation)).latest("pk").pk)


def follow(client: Client, response: Any) -> str:
    assert response.status_code == 303, (response.status_code, text_of(response)[:500])
    return text_of(client.get(response["Location"]))


def rows_of(body: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'data-queue-row data-pk="(\d+)"', body)]


# --- the list ----------------------------------------------------------------------------------------------


def test_the_list_shows_only_current_items_with_open_reports_newest_report_first(
    reviewer: User, api: Any
) -> None:
    day = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    a, b, c = agent("agent-a")[0], agent("agent-b")[0], agent("agent-c")[0]
    held = remember()
    report(held, "outdated", a, now=day)
    report(held, "outdated", b, now=day)
    report(held, "wrong", c, now=day)
    lowered = remember("Deploys to staging need the VPN.")
    report(lowered, "wrong", a, now=day + timedelta(hours=1))
    used = remember("Staging deploys run from the release branch.")
    report(used, "used", a, now=day)
    revised = remember("The staging cache is Redis 6.")
    report(revised, "outdated", a, now=day)
    memory_services.memory_revise(
        scope_id=SCOPE,
        citation=memory_services.Citation(
            family="memory",
            artifact_id="memory",
            revision=revised["memory_ref"]["revision"],
            entry_id=revised["entry_id"],
            entry_version_id=revised["entry_version_id"],
        ),
        kind="note",
        text="The staging cache is Redis 7.",
    )
    experience = experience_citation(reviewer)
    report(experience, "wrong", a, now=day + timedelta(hours=2))
    report(experience, "used", b, now=day + timedelta(hours=3))
    retired = experience_citation(reviewer, lesson="Restart the staging database after every deploy.")
    report(retired, "wrong", a, now=day)
    client = client_for(reviewer)
    client.post(item_url(retired, "retire"), {"reason": "Never true."})
    dismissed = remember("Staging uses the eu-west-1 region.")
    report(dismissed, "outdated", a, now=day)
    client.post(
        item_url(dismissed, "dismiss"), {"seen_through": newest_report(dismissed), "reason": "Still true."}
    )

    body = text_of(client.get(reverse("review:reported")))
    assert rows_of(body) == [counter(experience).pk, counter(lowered).pk, counter(held).pk]
    assert "Reported outdated by 2 agents, wrong by 1" in body
    assert "Reported wrong by 1 agent" in body
    assert body.count('data-flag="held"') == 1
    held_row = body[body.index(f'data-pk="{counter(held).pk}"') :]
    assert 'data-flag="held"' in held_row[: held_row.index("</tr>")]
    assert "1 use, " in body  # the Experience's use, and its last use
    assert 'data-count="reported">3<' in body
    # The queue links to it, with the same count.
    queue = text_of(client.get(reverse("review:queue")))
    assert f'href="{reverse("review:reported")}"' in queue and 'data-count="reported">3<' in queue


def test_the_list_pages_by_newest_report(
    reviewer: User, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from review.selectors import reports as report_selectors

    monkeypatch.setattr(report_selectors, "PAGE_SIZE", 2)
    settings.POWERCONTEXT_FEEDBACK_RATE_PER_MINUTE = 0
    token, _ = agent("agent-a")
    day = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    made = []
    for n in range(5):
        citation = remember(f"Staging note number {n}.")
        report(citation, "wrong", token, now=day + timedelta(minutes=n % 3))  # ties on purpose
        made.append(counter(citation).pk)
    client = client_for(reviewer)
    first = text_of(client.get(reverse("review:reported")))
    seen = rows_of(first)
    while (match := re.search(r'rel="next" href="\?after=([0-9-]+)"', first)) is not None:
        first = text_of(client.get(reverse("review:reported"), {"after": match[1]}))
        seen += rows_of(first)
    assert sorted(seen) == sorted(made) and len(seen) == 5
    for junk in ("abc", "1-", "-1", "9" * 60, "²-3"):
        assert rows_of(text_of(client.get(reverse("review:reported"), {"after": junk})))[:2] == seen[:2]


# --- one item ----------------------------------------------------------------------------------------------


def test_the_item_page_shows_the_text_every_report_its_uses_and_never_a_token_secret(reviewer: User) -> None:
    citation = remember(f"{STALE} {PAYLOAD}")
    first, secret = agent(f"agent-a {PAYLOAD}")
    second, other_secret = agent("agent-b")
    report(citation, "used", first)
    report(
        citation, "outdated", first, note=f"Moved. {PAYLOAD} token=pct_abcdefghijklmnopqrstuvwxyz0123456789"
    )
    report(citation, "wrong", second)
    report(citation, "wrong", None)  # the local caller of the embedded default
    body = text_of(client_for(reviewer).get(item_url(citation)))
    assert "<script>alert(" not in body and "&lt;script&gt;alert(" in body
    assert "The staging database listens on port 6543." in body
    assert body.count("data-report=") == 3
    assert f"agent-b · token #{second.pk}" in body and "local caller (no token)" in body
    assert secret not in body and other_secret not in body
    assert secret[:8] not in body and other_secret[:8] not in body
    assert "pct_abcdefghijklmnopqrstuvwxyz0123456789" not in body  # notes are stored redacted
    assert "cited Memory revision" in body and "1 time" in body
    assert "Reported outdated by 1 agent, wrong by 2" in body and "held out of prepare" in body
    assert f'name="seen_through" value="{newest_report(citation)}"' in body
    for form in ("reported-dismiss", "reported-retire", "reported-revise"):
        assert reverse(f"review:{form}", args=[counter(citation).pk]) in body
    assert 'data-key="e"' in body and 'data-key="u"' in body


def test_an_unknown_item_is_a_404(reviewer: User) -> None:
    client = client_for(reviewer)
    assert client.get(reverse("review:reported-item", args=[98765])).status_code == 404
    response = client.post(reverse("review:reported-retire", args=[98765]), {"reason": "x"})
    assert response.status_code == 404 and "No such reported item" in text_of(response)


# --- decisions ---------------------------------------------------------------------------------------------


def test_retire_takes_a_memory_entry_out_of_prepare_and_undo_brings_it_back(reviewer: User, api: Any) -> None:
    citation = remember()
    report(citation, "wrong", agent("agent-a")[0])
    assert STALE in texts(api)  # one reporter: lowered, not held
    client = client_for(reviewer)
    body = follow(client, client.post(item_url(citation, "retire"), {"reason": "The port was never 6543."}))
    assert STALE not in texts(api)
    decision = ReportDecision.objects.get()
    assert (decision.action, decision.reviewer, decision.reason) == (
        "retired",
        reviewer,
        "The port was never 6543.",
    )
    assert "Retired the entry" in body and "data-not-current" in body and "data-undo-decision" in body
    assert counter(citation).pk not in rows_of(text_of(client.get(reverse("review:reported"))))

    body = follow(client, client.post(item_url(citation, "undo"), {"decision": decision.pk}))
    assert "Undone: the retired decision" in body
    assert STALE in texts(api)
    assert ReportDecision.objects.filter(action="undone", undoes=decision).count() == 1
    assert "data-undo-decision" not in body  # nothing left to undo


def test_revise_a_held_memory_entry_and_prepare_returns_the_new_text(reviewer: User, api: Any) -> None:
    citation = remember()
    held_by_two(citation)
    assert STALE not in texts(api)
    client = client_for(reviewer)
    page = text_of(client.get(item_url(citation)))
    assert f">\n{STALE}</textarea>" in page  # prefilled with the reported text
    body = follow(
        client, client.post(item_url(citation, "revise"), {"text": NEW, "reason": "Moved in December."})
    )
    assert texts(api) == [NEW]
    decision = ReportDecision.objects.get()
    assert decision.action == "revised" and decision.new_target.startswith("m:")
    assert "prepare returns the new text" in body
    assert counter(citation).pk not in rows_of(text_of(client.get(reverse("review:reported"))))

    follow(client, client.post(item_url(citation, "undo"), {"decision": decision.pk}))
    assert texts(api) == []  # the reported version is back, with its reports: held again
    assert ReportDecision.objects.count() == 2


def test_revise_proposes_an_experience_update_into_the_queue(reviewer: User, api: Any) -> None:
    citation = experience_citation(reviewer)
    report(citation, "outdated", agent("agent-a")[0])
    client = client_for(reviewer)
    page = text_of(client.get(item_url(citation)))
    assert (
        "Propose an update" in page and "The staging database port changed during the December move." in page
    )
    new_lesson = "Read the staging database port from the service catalogue."
    response = client.post(
        item_url(citation, "revise"), {**EXPERIENCE, "lesson": new_lesson, "reason": "Moved."}
    )
    body = follow(client, response)
    candidate = Candidate.objects.get(status="pending")
    assert candidate.latest is not None and candidate.latest.target == citation["artifact_ref"]
    assert candidate.latest.proposal["lesson"] == new_lesson
    assert f'href="{reverse("review:candidate", args=[candidate.pk])}"' in body
    decision = ReportDecision.objects.get()
    assert (decision.action, decision.candidate_id) == ("revised", candidate.candidate_id)
    assert any(LESSON in text for text in texts(api))  # until a reviewer approves the update

    approve(candidate, make_user("second-reviewer", reviewer=True))
    prepared = texts(api)
    assert any(new_lesson in text for text in prepared) and not any(LESSON in text for text in prepared)
    assert counter(citation).pk not in rows_of(text_of(client.get(reverse("review:reported"))))


def test_undo_of_a_proposed_update_rejects_the_candidate(reviewer: User) -> None:
    citation = experience_citation(reviewer)
    report(citation, "wrong", agent("agent-a")[0])
    client = client_for(reviewer)
    client.post(item_url(citation, "revise"), {**EXPERIENCE, "lesson": "Another lesson.", "reason": "Wrong."})
    decision = ReportDecision.objects.get()
    body = follow(client, client.post(item_url(citation, "undo"), {"decision": decision.pk}))
    assert "the proposed update is rejected" in body
    assert Candidate.objects.get(candidate_id=decision.candidate_id).status == "rejected"


def test_dismiss_brings_a_held_entry_back_later_reports_count_and_undo_holds_it_again(
    reviewer: User, api: Any
) -> None:
    citation = remember()
    held_by_two(citation)
    assert STALE not in texts(api)
    client = client_for(reviewer)
    seen = newest_report(citation)
    body = follow(
        client, client.post(item_url(citation, "dismiss"), {"seen_through": seen, "reason": "Still 6543."})
    )
    assert STALE in texts(api)
    decision = ReportDecision.objects.get()
    assert (decision.action, decision.through_feedback) == ("dismissed", seen)
    assert "Dismissed the reports up to" in body and body.count('title="Covered by a dismissal') == 2
    assert counter(citation).pk not in rows_of(text_of(client.get(reverse("review:reported"))))
    report(citation, "wrong", agent("agent-c")[0])  # a report after the dismissal counts anew
    assert counter(citation).reporters == 1 and STALE in texts(api)

    follow(client, client.post(item_url(citation, "undo"), {"decision": decision.pk}))
    assert counter(citation).reporters == 3 and STALE not in texts(api)


@pytest.mark.parametrize("action", ["dismiss", "retire", "revise"])
def test_a_reason_is_required_and_what_was_typed_comes_back(reviewer: User, action: str) -> None:
    citation = remember()
    held_by_two(citation)
    client = client_for(reviewer)
    data = {"seen_through": newest_report(citation), "text": NEW, "reason": "   "}
    response = client.post(item_url(citation, action), data)
    assert response["Location"] == f"{item_url(citation)}#{action}"
    body = follow(client, response)
    assert "A reason is required." in body and 'aria-invalid="true"' in body
    if action == "revise":
        assert f">\n{NEW}</textarea>" in body
    assert not ReportDecision.objects.exists()
    # Shown once: a reload shows the fresh form.
    assert "A reason is required." not in text_of(client.get(item_url(citation)))


def test_an_unchanged_text_or_a_blank_experience_field_is_refused_on_its_form(reviewer: User) -> None:
    citation = remember()
    report(citation, "wrong", agent("agent-a")[0])
    client = client_for(reviewer)
    body = follow(client, client.post(item_url(citation, "revise"), {"text": STALE, "reason": "No change."}))
    assert "The new text is the same as the old." in body and 'aria-describedby="revise-text_error"' in body
    experience = experience_citation(reviewer)
    report(experience, "wrong", agent("agent-b")[0])
    response = client.post(item_url(experience, "revise"), {**EXPERIENCE, "outcome": " ", "reason": "Blank."})
    assert response["Location"] == f"{item_url(experience)}#propose"
    body = follow(client, response)
    assert "This field is required." in body and 'aria-describedby="propose-outcome_error"' in body
    assert not ReportDecision.objects.exists() and not Candidate.objects.filter(status="pending").exists()


def test_a_dismissal_of_reports_dismissed_meanwhile_is_refused_with_a_message(reviewer: User) -> None:
    citation = remember()
    held_by_two(citation)
    seen = newest_report(citation)
    first, second = client_for(reviewer), client_for(make_user("other-reviewer", reviewer=True))
    follow(first, first.post(item_url(citation, "dismiss"), {"seen_through": seen, "reason": "Still true."}))
    response = second.post(item_url(citation, "dismiss"), {"seen_through": seen, "reason": "Also true."})
    assert response.status_code == 409
    body = text_of(response)
    assert "Nothing was changed" in body and "dismissed since this page was shown" in body
    assert "Also true." in body  # the form as posted
    assert ReportDecision.objects.count() == 1
    # A report id the item does not have is refused too, tied to the form.
    response = second.post(item_url(citation, "dismiss"), {"seen_through": seen + 1000, "reason": "x"})
    assert "No such report of this item." in follow(second, response)
    assert ReportDecision.objects.count() == 1


@pytest.mark.parametrize("action", ["retire", "revise"])
def test_a_decision_on_an_item_that_changed_is_refused_with_a_message(reviewer: User, action: str) -> None:
    citation = remember()
    held_by_two(citation)
    memory_services.memory_retire(
        scope_id=SCOPE,
        citation=memory_services.Citation(
            family="memory",
            artifact_id="memory",
            revision=citation["memory_ref"]["revision"],
            entry_id=citation["entry_id"],
            entry_version_id=citation["entry_version_id"],
        ),
    )
    response = client_for(reviewer).post(item_url(citation, action), {"text": NEW, "reason": "Moved."})
    assert response.status_code == 409
    body = text_of(response)
    assert "changed since this page was shown" in body and "The entry was retired" in body
    assert not ReportDecision.objects.exists()


def test_an_experience_retired_meanwhile_is_refused_and_a_second_undo_too(reviewer: User) -> None:
    citation = experience_citation(reviewer)
    report(citation, "wrong", agent("agent-a")[0])
    client = client_for(reviewer)
    follow(client, client.post(item_url(citation, "retire"), {"reason": "Wrong."}))
    response = client.post(item_url(citation, "retire"), {"reason": "Wrong again."})
    assert response.status_code == 409 and "Nothing was changed" in text_of(response)
    decision = ReportDecision.objects.get()
    follow(client, client.post(item_url(citation, "undo"), {"decision": decision.pk}))
    again = client.post(item_url(citation, "undo"), {"decision": decision.pk})
    assert again.status_code == 409 and "already taken back" in text_of(again)
    assert ReportDecision.objects.count() == 2
    # A decision of another item is not this item's to undo.
    other = remember()
    report(other, "wrong", agent("agent-b")[0])
    assert client.post(item_url(other, "undo"), {"decision": decision.pk}).status_code == 404


# --- who may do what -------------------------------------------------------------------------------------


def test_anonymous_users_go_to_the_log_in_page_and_change_nothing(reviewer: User) -> None:
    citation = remember()
    report(citation, "wrong", agent("agent-a")[0])
    for path in (reverse("review:reported"), item_url(citation)):
        assert Client().get(path)["Location"].startswith("/accounts/login/?next=")
    response = Client().post(item_url(citation, "retire"), {"reason": "x"})
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=" + item_url(citation))
    assert not ReportDecision.objects.exists()


def test_a_viewer_reads_without_forms_and_is_forbidden_to_decide(viewer: User, reviewer: User) -> None:
    citation = remember()
    report(citation, "wrong", agent("agent-a")[0])
    client = client_for(viewer)
    assert rows_of(text_of(client.get(reverse("review:reported")))) == [counter(citation).pk]
    body = text_of(client.get(item_url(citation)))
    assert "Read-only" in body and "reported-retire" not in body and 'name="reason"' not in body
    for action in ("dismiss", "retire", "revise", "undo"):
        data = {"seen_through": newest_report(citation), "reason": "x", "text": NEW, "decision": 1}
        assert client.post(item_url(citation, action), data).status_code == 403
    assert not ReportDecision.objects.exists()


def test_decisions_are_csrf_checked_and_a_get_changes_nothing(reviewer: User) -> None:
    citation = remember()
    report(citation, "wrong", agent("agent-a")[0])
    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    assert client.post(item_url(citation, "retire"), {"reason": "x"}).status_code == 403
    response = client.get(item_url(citation, "retire"))
    assert response.status_code == 302 and response["Location"] == item_url(citation)
    assert not ReportDecision.objects.exists()


# --- query counts ------------------------------------------------------------------------------------------


def _queries(client: Client, path: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path)
    assert response.status_code == 200
    return len(captured.captured_queries)


def _reported(n: int, start: int, tokens: list[ApiToken], reviewer: User) -> list[dict[str, Any]]:
    """``n`` more reported items: Memory entries and Experiences, some held, some used."""
    made = []
    for i in range(start, start + n):
        if i % 4 == 3:
            citation = experience_citation(reviewer, lesson=f"Lesson number {i} about staging.")
        else:
            citation = remember(f"Staging fact number {i}.")
        for token in tokens[: 1 + i % 2]:
            report(citation, "wrong" if i % 3 else "outdated", token, note=f"note {i}")
        report(citation, "used", tokens[0])
        made.append(citation)
    return made


def test_the_list_and_an_item_cost_the_same_queries_for_10_and_100_reported_items(
    reviewer: User, settings: Any
) -> None:
    settings.POWERCONTEXT_FEEDBACK_RATE_PER_MINUTE = 0
    tokens = [agent(f"agent-{n}")[0] for n in range(3)]
    client = client_for(reviewer)
    made = _reported(10, 0, tokens, reviewer)
    memory, experience = made[0], made[3]
    list_small = _queries(client, reverse("review:reported"))
    queue_small = _queries(client, reverse("review:queue"))
    memory_small = _queries(client, item_url(memory))
    experience_small = _queries(client, item_url(experience))
    _reported(90, 10, tokens, reviewer)
    assert FeedbackCounter.objects.filter(reporters__gt=0).count() == 100
    assert _queries(client, reverse("review:reported")) == list_small
    assert _queries(client, reverse("review:queue")) == queue_small
    assert _queries(client, item_url(memory)) == memory_small
    assert _queries(client, item_url(experience)) == experience_small
    # Session, user, two permission reads, then the page and the capped count; an item: the
    # counter with its version or revision, (Memory) the entry's open interval, its reports and
    # its decisions.
    assert (list_small, memory_small, experience_small) == (6, 8, 7)


def test_an_item_costs_the_same_queries_for_few_and_many_reports_and_decisions(
    reviewer: User, settings: Any
) -> None:
    settings.POWERCONTEXT_FEEDBACK_RATE_PER_MINUTE = 0
    client = client_for(reviewer)
    few = remember()
    report(few, "wrong", agent("agent-0")[0])
    many = remember("Deploys to staging need the VPN.")
    for n in range(1, 30):
        report(many, "outdated" if n % 2 else "wrong", agent(f"agent-{n}")[0], note=f"note {n}")
    for n in range(3):
        follow(
            client,
            client.post(item_url(many, "dismiss"), {"seen_through": newest_report(many), "reason": "ok"}),
        )
        decision = ReportDecision.objects.filter(target=target_of(many)).latest("pk")
        follow(client, client.post(item_url(many, "undo"), {"decision": decision.pk}))
        report(many, "wrong", agent(f"late-{n}")[0])
    assert ReportDecision.objects.filter(target=target_of(many)).count() == 6
    assert _queries(client, item_url(few)) == _queries(client, item_url(many))
