"""The conflict editor (issue 22, "Safe updates"): a rebase whose three-way merge conflicts opens
a page with, per conflicting field, the base, the current approved revision and the update side
by side; the reviewer takes one side or edits; saving writes the next version targeting the
current revision (``candidate_resolve``: the same merge again, one transaction, version
compare-and-swap), and the candidate page diffs it against that revision, so dropped approved
text shows as removed."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from powercontext.core.models import ArtifactRevision
from review.models import Candidate
from tests.review.conftest import approve, experience, make_candidate, make_update_candidate, result_ref
from tests.review.test_inbox_views import client_for, refresh, text_of, url

pytestmark = pytest.mark.django_db

ADDED = "Revision two adds this sentence."


def _conflicting(reviewer: User) -> tuple[Candidate, Candidate, dict[str, str]]:
    """Two updates of revision 1: the first approved as revision 2 (adds a sentence to the
    outcome); the other still targets revision 1 and rewrites the outcome and the lesson."""
    proposal = experience(lesson="Revision one's lesson.")
    base = approve(make_candidate(proposal=proposal), reviewer)
    first = make_update_candidate(base, {**proposal, "outcome": proposal["outcome"] + " " + ADDED})
    stale = make_update_candidate(
        base, {**proposal, "outcome": "A different outcome.", "lesson": "The stale update's <lesson>."}
    )
    return approve(first, reviewer), stale, proposal


def _post(client: Client, stale: Candidate, **fields: str) -> object:
    data = {"expected_version": "1", "onto_revision": "2", **fields}
    return client.post(url("merge", stale) + "?family=experience", data)


def test_a_conflicting_rebase_opens_the_editor_with_the_three_sides(reviewer: User) -> None:
    moved, stale, proposal = _conflicting(reviewer)
    client = client_for(reviewer)
    response = client.post(url("rebase", stale), {"expected_version": 1, "revision": 2})
    assert response.status_code == 302 and response["Location"] == url("merge", stale)
    assert refresh(stale).version == 1  # the rebase itself wrote nothing

    body = text_of(client.get(response["Location"]))
    assert "Not rebased" in body and "both changed outcome" in body
    fields = re.findall(r'data-conflict-field="(\w+)"', body)
    assert fields == ["outcome"]  # only the conflicting field gets a choice
    sides = dict(
        re.findall(r'data-side="(\w+)"><h3>[^<]*</h3><div class="text">(.*?)</div></section>', body, re.S)
    )
    assert html.unescape(sides["base"]) == proposal["outcome"]
    assert html.unescape(sides["current"]) == proposal["outcome"] + " " + ADDED
    assert html.unescape(sides["update"]) == "A different outcome."
    for choice in ("current", "update", "edit"):
        assert f'name="choice_outcome" value="{choice}"' in body
    assert 'name="onto_revision" value="2"' in body and 'name="expected_version" value="1"' in body
    # The lesson merges cleanly (changed by the update only) and shows its merged value, escaped.
    assert 'data-clean-field="lesson"' in body and "The stale update&#x27;s &lt;lesson&gt;." in body


def test_take_current_keeps_revision_twos_sentence_and_the_updates_other_change(reviewer: User) -> None:
    moved, stale, proposal = _conflicting(reviewer)
    client = client_for(reviewer)
    response = _post(client, stale, choice_outcome="current", outcome="ignored unless edited")
    assert response.status_code == 302
    assert response["Location"] == url("candidate", stale) + "?family=experience"
    stale = refresh(stale)
    assert stale.version == 2 and stale.latest.target == {**result_ref(moved), "revision": 2}
    assert stale.latest.artifact_refs == [stale.latest.target] and stale.latest.created_by == reviewer
    assert stale.latest.proposal["outcome"] == proposal["outcome"] + " " + ADDED
    assert stale.latest.proposal["lesson"] == "The stale update's <lesson>."
    page = text_of(client.get(response["Location"]))
    assert "Resolved the conflicts with revision 2" in page
    removed = " ".join(re.findall(r"<del>(.*?)</del>", page))
    assert "adds" not in removed and "sentence" not in removed  # nothing of revision 2's sentence removed
    assert client.post(url("approve", stale), {"expected_version": 2}).status_code == 302
    content = ArtifactRevision.objects.get(head=refresh(stale).result_head, revision=3).content
    assert content["outcome"].endswith(ADDED)


def test_take_update_drops_the_sentence_only_visibly_in_the_diff(reviewer: User) -> None:
    _, stale, _ = _conflicting(reviewer)
    client = client_for(reviewer)
    response = _post(client, stale, choice_outcome="update", outcome="")
    assert response.status_code == 302
    assert refresh(stale).latest.proposal["outcome"] == "A different outcome."
    page = text_of(client.get(response["Location"]))
    removed = " ".join(re.findall(r"<del>(.*?)</del>", page))
    assert "adds" in removed and "sentence" in removed  # the approved sentence shows as removed


def test_edit_saves_the_reviewers_result(reviewer: User) -> None:
    _, stale, proposal = _conflicting(reviewer)
    merged = f"A different outcome. {ADDED}"
    response = _post(client_for(reviewer), stale, choice_outcome="edit", outcome=merged + "\r\n")
    assert response.status_code == 302
    assert refresh(stale).latest.proposal["outcome"] == merged + "\n"


@pytest.mark.parametrize(
    ("fields", "message"),
    [({}, "Choose which text to keep."), ({"choice_outcome": "edit", "outcome": "   "}, "non-whitespace")],
)
def test_a_missing_choice_or_an_empty_edit_is_refused_and_writes_nothing(
    reviewer: User, fields: dict[str, str], message: str
) -> None:
    _, stale, _ = _conflicting(reviewer)
    client = client_for(reviewer)
    response = _post(client, stale, **fields)
    # POST/redirect/GET: back to the editor with the error and what was posted; nothing written.
    assert response.status_code == 303 and response["Location"] == url("merge", stale) + "?family=experience"
    assert refresh(stale).version == 1
    page = text_of(client.get(response["Location"]))
    assert message in page and 'role="alert"' in page
    if fields:
        assert 'value="edit" checked' in page
    assert message not in text_of(client.get(response["Location"]))  # shown once


def test_a_head_that_moved_again_is_a_409_and_nothing_is_written(reviewer: User) -> None:
    moved, stale, _ = _conflicting(reviewer)
    approve(make_update_candidate(moved), reviewer)  # the head is at revision 3 now
    response = _post(client_for(reviewer), stale, choice_outcome="current")
    assert response.status_code == 409 and "The target moved on" in text_of(response)
    assert refresh(stale).version == 1
    # Opened again, the editor merges against the new head.
    body = text_of(client_for(reviewer).get(url("merge", stale)))
    assert 'name="onto_revision" value="3"' in body


def test_a_candidate_changed_meanwhile_is_a_409_and_nothing_is_written(reviewer: User) -> None:
    _, stale, _ = _conflicting(reviewer)
    client = client_for(reviewer)
    assert _post(client, stale, choice_outcome="update").status_code == 302  # version 2 now
    response = _post(client, stale, choice_outcome="current")  # the page still says version 1
    assert response.status_code == 409
    assert refresh(stale).version == 2


def test_the_editor_needs_a_csrf_token(reviewer: User) -> None:
    _, stale, _ = _conflicting(reviewer)
    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    assert _post(client, stale, choice_outcome="current").status_code == 403
    assert refresh(stale).version == 1
    page = text_of(client.get(url("merge", stale)))
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token is not None
    ok = _post(client, stale, choice_outcome="current", csrfmiddlewaretoken=token.group(1))
    assert ok.status_code == 302 and refresh(stale).version == 2


def test_viewers_and_anonymous_users_cannot_use_the_editor(reviewer: User, viewer: User) -> None:
    _, stale, _ = _conflicting(reviewer)
    assert client_for(viewer).get(url("merge", stale)).status_code == 403
    assert _post(client_for(viewer), stale, choice_outcome="update").status_code == 403
    anonymous = client_for(None).get(url("merge", stale))
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    assert refresh(stale).version == 1


def test_a_candidate_without_a_conflict_to_resolve_goes_back_to_its_page(reviewer: User) -> None:
    candidate = make_candidate()
    response = client_for(reviewer).get(url("merge", candidate))
    assert response.status_code == 302 and response["Location"] == url("candidate", candidate)
    decided = approve(make_candidate(), reviewer)
    assert client_for(reviewer).get(url("merge", decided)).status_code == 409
    assert client_for(reviewer).get("/review/candidates/999999/merge/").status_code == 404


def test_a_stale_update_that_merges_cleanly_is_sent_back_to_rebase(reviewer: User) -> None:
    proposal = experience()
    base = approve(make_candidate(proposal=proposal), reviewer)
    first = make_update_candidate(base, {**proposal, "outcome": "Revision two's outcome."})
    stale = make_update_candidate(base, {**proposal, "lesson": "Only the lesson changes here."})
    approve(first, reviewer)
    client = client_for(reviewer)
    response = client.get(url("merge", stale))
    assert response.status_code == 302 and response["Location"] == url("candidate", stale)
    assert "rebase the candidate instead" in text_of(client.get(response["Location"]))
