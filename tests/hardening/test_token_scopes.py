"""Tokens limited to scopes (``create_api_token NAME --scope S``): every operation that carries a
scope_id refuses other scopes with 403 scope_forbidden, reviewer operations included."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from context_api.operations import OPERATIONS as BODY_OPERATIONS
from context_api.operations.stats import get_stats
from powercontext.core.models import ApiToken
from powercontext.core.tokens import api_token_create, token_digest
from review.models import Candidate
from tests.api.helpers import assert_error, row_counts
from tests.review.factories import experience_proposal, make_candidate, make_source, skill_proposal

ALLOWED, OTHER = "project-a", "project-b"


def _token(*args: str) -> str:
    out = io.StringIO()
    call_command("create_api_token", *args, stdout=out)
    return out.getvalue().splitlines()[-1]


@pytest.fixture
def scoped(api: Any) -> Any:
    api.token = _token("alice", "--reviewer", "--scope", ALLOWED, "--scope", "project-c")
    return api


def _body(op: str, scope_id: str) -> dict[str, Any]:
    """A valid body for each scoped operation (the scope check follows validation)."""
    citation = {
        "memory_ref": {"family": "memory", "artifact_id": "memory", "revision": 1},
        "entry_id": "e1",
        "entry_version_id": "v1",
    }
    candidate = {"candidate_id": "c1", "expected_version": 1}
    evidence = {"source_refs": [{"name": "content", "source_id": "x"}], "artifact_refs": []}
    ref = {"family": "experience", "artifact_id": "a1", "revision": 1}
    bodies: dict[str, dict[str, Any]] = {
        "prepare_context": {"query": "q"},
        "capture_content_source": {"source_id": "s1", "content": "c"},
        "remember_memory": {"kind": "note", "text": "t"},
        "search_memory": {"query": "q"},
        "list_memory_entries": {},
        "get_memory_entry": {"citation": citation},
        "revise_memory_entry": {"citation": citation, "kind": "note", "text": "t"},
        "retire_memory_entry": {"citation": citation},
        "list_memory_changes": {},
        "propose_experience": {"proposal": experience_proposal(), **evidence},
        "propose_skill": {"proposal": skill_proposal(), **evidence},
        "get_experience": {"artifact": ref},
        "get_skill": {"artifact": {**ref, "family": "skill"}},
        "list_artifact_candidates": {},
        "get_artifact_candidate": {"candidate_id": "c1"},
        "approve_artifact_candidate": candidate,
        "reject_artifact_candidate": {**candidate, "reason": "no"},
        "revise_artifact_candidate": {**candidate, "proposal": experience_proposal(), **evidence},
        "get_stats": {},
        "flush_memory": {},
        "write_session_note": {"session_id": "s", "path": "plan.md", "content": "c"},
        "read_session_note": {"session_id": "s", "path": "plan.md"},
        "list_session_notes": {"session_id": "s"},
        "search_session_notes": {"session_id": "s", "query": "q"},
        "list_session_history": {"session_id": "s"},
        "search_session_history": {"session_id": "s", "query": "q"},
        "read_session_history": {"session_id": "s", "from_position": 1},
        "get_recovery_hint": {"session_id": "s"},
        "report_context_feedback": {"items": [{"citation": citation, "outcome": "used"}]},
        "request_changes_artifact_candidate": {**candidate, "comment": "c"},
        "comment_artifact_candidate": {**candidate, "comment": "c"},
        "get_artifact_candidate_thread": {"candidate_id": "c1"},
        "answer_artifact_candidate": {**candidate, "proposal": experience_proposal(), **evidence},
    }
    return {"scope_id": scope_id, **bodies[op]}


OPERATIONS = {**BODY_OPERATIONS, "get_stats": get_stats}
SCOPED_OPERATIONS = sorted(op for op in OPERATIONS if "scope_id" in OPERATIONS[op].input().fields)


def test_every_scoped_operation_is_covered() -> None:
    assert len(SCOPED_OPERATIONS) == 33


def _send(api: Any, op: str, scope_id: str) -> Any:
    operation = OPERATIONS[op]
    if operation.method == "GET":
        return api.get(f"/{operation.path}", **_body(op, scope_id))
    return api.post(f"/{operation.path}", _body(op, scope_id))


@pytest.mark.parametrize("op", SCOPED_OPERATIONS)
def test_a_scoped_token_is_refused_another_scope_and_writes_nothing(scoped: Any, op: str) -> None:
    before = row_counts()
    assert_error(_send(scoped, op, OTHER), 403, "scope_forbidden")
    assert row_counts() == before


@pytest.mark.parametrize("op", SCOPED_OPERATIONS)
def test_a_scoped_token_reaches_its_own_scope(scoped: Any, op: str) -> None:
    response = _send(scoped, op, ALLOWED)
    assert response.status_code != 403, response.content


def test_a_scoped_token_works_end_to_end_in_its_scope(scoped: Any) -> None:
    scoped.remember(ALLOWED, "allowed fact")
    assert scoped.search(ALLOWED, "allowed")["hits"]
    candidate = make_candidate(ALLOWED, source_refs=[make_source(ALLOWED)])
    body = {"scope_id": ALLOWED, "candidate_id": candidate.candidate_id, "expected_version": 1}
    assert scoped.post("/v1/artifact-candidates/approve", body).status_code == 200
    other = make_candidate(OTHER, source_refs=[make_source(OTHER)])
    body = {"scope_id": OTHER, "candidate_id": other.candidate_id, "expected_version": 1}
    assert_error(scoped.post("/v1/artifact-candidates/approve", body), 403, "scope_forbidden")
    assert Candidate.objects.get(pk=other.pk).status == "pending"


def test_a_token_without_scopes_reaches_every_scope(api: Any) -> None:
    api.token = _token("bob")
    api.remember(ALLOWED, "one")
    api.remember(OTHER, "two")
    assert ApiToken.objects.get().scopes == []


def test_the_command_stores_the_scopes(db: None) -> None:
    secret = _token("carol", "--scope", "x", "--scope", "y", "--scope", "x")
    assert ApiToken.objects.get(digest=token_digest(secret)).scopes == ["x", "y"]


def test_the_service_rejects_a_blank_scope(db: None) -> None:
    user = User.objects.create(username="dave")
    with pytest.raises(ValueError):
        api_token_create(user=user, name="", scopes=[" "])
    assert not ApiToken.objects.exists()


def test_the_admin_shows_a_tokens_scopes(admin_client: Client) -> None:
    user = User.objects.create(username="erin")
    token, _ = api_token_create(user=user, name="ci", scopes=["alpha-scope", "beta-scope"])
    listing = admin_client.get("/admin/powercontext/apitoken/").content.decode()
    assert "alpha-scope, beta-scope" in listing
    detail = admin_client.get(f"/admin/powercontext/apitoken/{token.pk}/change/").content.decode()
    assert "alpha-scope, beta-scope" in detail
