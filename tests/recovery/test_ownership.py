"""Session recovery state belongs to its owner (issue 33): another agent token of the same scope
gets, for a session it does not own, exactly what an unknown session answers (notes and history,
read and write); tokenless calls are one identity, ``local``; an operator reads any note with a
reason and the read is audited; note writes are redacted; pipeline Memory names no session."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from powercontext.core.models import ApiToken, MemoryEntryVersion, Source
from powercontext.core.tokens import api_token_create
from powercontext.pipeline.materialize import opaque_source_ref
from powercontext.recovery.models import NoteReadAudit, RecoverySession, SessionNoteVersion
from tests.conftest import Api
from tests.pipeline.helpers import StubGenerator, memory, output, run_pass
from tests.recovery.helpers import PATHS, call, ok

SCOPE, SESSION, UNKNOWN = "git:example/app", "agent-a-task-7", "no-such-session"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5" * 3 + "abcdef"
PLAN = f"Goal: ship the release\npush with {GITHUB_TOKEN}\nNext: tag v2\n"


def agent(name: str, role: str = ApiToken.Role.AGENT) -> Api:
    user = User.objects.create_user(username=name)
    _token, secret = api_token_create(user=user, name=name, scopes=[SCOPE], role=role)
    return Api(Client(), token=secret)


@pytest.fixture
def alice(db: None) -> Api:
    return agent("alice")


@pytest.fixture
def bob(db: None) -> Api:
    return agent("bob")


def error(response: Any) -> tuple[int, str, Any]:
    body = response.json()["error"]
    return response.status_code, body["code"], body.get("details")


def write_plan(api: Any, session: str = SESSION, content: str = PLAN, **extra: Any) -> Any:
    return call(api, "write", SCOPE, session, path="plan.md", content=content, **extra)


def capture(api: Any, source_id: str, content: str, session: str = SESSION) -> None:
    body = {
        "scope_id": SCOPE,
        "source_id": source_id,
        "content": content,
        "metadata": {"session_id": session},
    }
    assert api.post("/v1/sources/content", body).status_code == 202


def test_another_token_can_neither_read_nor_rewrite_the_owners_plan(alice: Api, bob: Api) -> None:
    assert write_plan(alice).status_code == 200

    # Bob knows the session id: every read answers as for a session that does not exist.
    for name, body in [
        ("read", {"path": "plan.md"}),
        ("read", {"path": "plan.md", "version": 1}),
        ("list", {}),
        ("search", {"query": "Goal"}),
        ("hint", {}),
    ]:
        theirs, unknown = call(bob, name, SCOPE, SESSION, **body), call(bob, name, SCOPE, UNKNOWN, **body)
        assert theirs.status_code == unknown.status_code, name
        assert (
            theirs.json() == unknown.json() if theirs.status_code == 200 else error(theirs) == error(unknown)
        )
    assert error(call(bob, "read", SCOPE, SESSION, path="plan.md")) == (404, "note_not_found", None)
    assert ok(bob, "list", SCOPE, SESSION)["notes"] == []
    assert ok(bob, "search", SCOPE, SESSION, query="Goal")["matches"] == []

    # ... and every write is refused as not found, leaving the owner's note as it was.
    for extra in [{}, {"mode": "append"}, {"expected_version": 1}, {"expected_version": 0}]:
        refused = write_plan(bob, content="Goal: exfiltrate\n", **extra)
        assert error(refused) == (404, "note_not_found", None), extra
    refused = call(bob, "write", SCOPE, SESSION, path="other.md", content="x")
    assert error(refused) == (404, "note_not_found", None)
    assert SessionNoteVersion.objects.count() == 1
    mine = ok(alice, "read", SCOPE, SESSION, path="plan.md")
    assert (mine["version"], mine["content"].splitlines()[0]) == (1, "Goal: ship the release")
    assert [n["path"] for n in ok(alice, "list", SCOPE, SESSION)["notes"]] == ["plan.md"]
    assert ok(alice, "search", SCOPE, SESSION, query="tag v2")["matches"][0]["line"] == 3
    assert "plan.md" in ok(alice, "hint", SCOPE, SESSION)["hint"]
    assert (
        ok(alice, "write", SCOPE, SESSION, path="plan.md", content="v2", expected_version=1)["note"][
            "version"
        ]
        == 2
    )


def test_the_first_writer_owns_the_session(alice: Api, bob: Api) -> None:
    assert write_plan(bob, session="bobs-session").status_code == 200

    assert error(write_plan(alice, session="bobs-session")) == (404, "note_not_found", None)
    owners = dict(RecoverySession.objects.values_list("session_id", "owner"))
    bob_token = ApiToken.objects.get(name="bob")
    assert owners == {"bobs-session": f"token:{bob_token.pk}"}


def test_history_is_what_the_reader_captured(alice: Api, bob: Api) -> None:
    capture(alice, f"{SESSION}:1", "deploy to the night window only")
    capture(alice, f"{SESSION}:2", "and keep the night window short")

    for name, body in [
        ("history", {}),
        ("history_search", {"query": "night"}),
        ("history_read", {"from_position": 1}),
        ("hint", {}),
    ]:
        assert ok(bob, name, SCOPE, SESSION, **body) == ok(bob, name, SCOPE, UNKNOWN, **body), name
    assert ok(bob, "history", SCOPE, SESSION)["items"] == []
    assert ok(bob, "history_read", SCOPE, SESSION, from_position=1)["items"] == []

    mine = ok(alice, "history_search", SCOPE, SESSION, query="night")
    assert [m["source_id"] for m in mine["matches"]] == [f"{SESSION}:1", f"{SESSION}:2"]
    assert "History: 2 sources" in ok(alice, "hint", SCOPE, SESSION)["hint"]

    # Bob capturing under the same session id sees his own source only; Alice's stay hers.
    capture(bob, "bob:1", "the night window is mine", session=SESSION)
    assert [i["source_id"] for i in ok(bob, "history", SCOPE, SESSION)["items"]] == ["bob:1"]
    assert [i["source_id"] for i in ok(alice, "history", SCOPE, SESSION)["items"]] == [
        f"{SESSION}:1",
        f"{SESSION}:2",
    ]


def test_tokenless_calls_are_one_local_identity(api: Any, alice: Api) -> None:
    assert write_plan(alice).status_code == 200
    assert write_plan(api, session="local-session").status_code == 200
    capture(api, "local:1", "a local prompt", session="local-session")

    assert error(call(api, "read", SCOPE, SESSION, path="plan.md")) == (404, "note_not_found", None)
    assert ok(api, "list", SCOPE, SESSION)["notes"] == []
    assert error(call(alice, "read", SCOPE, "local-session", path="plan.md")) == (404, "note_not_found", None)
    assert ok(alice, "history", SCOPE, "local-session")["items"] == []
    assert ok(Api(Client()), "read", SCOPE, "local-session", path="plan.md")["content"] == PLAN.replace(
        GITHUB_TOKEN, "[REDACTED:github_token]"
    )
    assert [i["source_id"] for i in ok(api, "history", SCOPE, "local-session")["items"]] == ["local:1"]
    assert RecoverySession.objects.get(session_id="local-session").owner == "local"
    assert Source.objects.get(source_id="local:1").captured_by == "local"


def test_an_operator_reads_any_note_with_a_reason_and_the_read_is_audited(alice: Api, bob: Api) -> None:
    assert write_plan(alice).status_code == 200
    operator = agent("olga", role=ApiToken.Role.OPERATOR)
    reason = "incident 42: agent A pushed with a leaked token"

    read = ok(operator, "read", SCOPE, SESSION, path="plan.md", reason=reason)

    assert read["content"].startswith("Goal: ship the release") and read["version"] == 1
    audit = NoteReadAudit.objects.get()
    olga = ApiToken.objects.get(name="olga")
    alice_token = ApiToken.objects.get(name="alice")
    assert (audit.reader, audit.user_id, audit.reason) == (f"token:{olga.pk}", olga.user_id, reason)
    assert (audit.scope_id, audit.session_id, audit.path, audit.version) == (SCOPE, SESSION, "plan.md", 1)
    assert audit.session_owner == f"token:{alice_token.pk}"


def test_only_an_operator_token_may_give_a_reason(api: Any, alice: Api, bob: Api) -> None:
    assert write_plan(alice).status_code == 200
    operator = agent("olga", role=ApiToken.Role.OPERATOR)

    assert error(call(bob, "read", SCOPE, SESSION, path="plan.md", reason="curious"))[:2] == (
        403,
        "forbidden",
    )
    assert error(call(api, "read", SCOPE, SESSION, path="plan.md", reason="curious"))[:2] == (
        401,
        "unauthorized",
    )
    missing = call(operator, "read", SCOPE, UNKNOWN, path="plan.md", reason="looking")
    assert error(missing) == (404, "note_not_found", None)
    assert call(operator, "read", SCOPE, SESSION, path="plan.md", reason="  ").status_code == 422
    assert NoteReadAudit.objects.count() == 0


def test_a_token_in_a_note_is_stored_and_read_back_redacted(alice: Api) -> None:
    written = write_plan(alice)
    appended = call(
        alice, "write", SCOPE, SESSION, path="plan.md", content=f"also {GITHUB_TOKEN}\n", mode="append"
    )

    assert written.status_code == 200 and appended.status_code == 200
    read = ok(alice, "read", SCOPE, SESSION, path="plan.md")
    assert GITHUB_TOKEN not in read["content"]
    assert read["content"].count("[REDACTED:github_token]") == 2
    assert read["size_bytes"] == len(read["content"].encode("utf-8"))
    stored = "".join(SessionNoteVersion.objects.values_list("content", flat=True))
    assert GITHUB_TOKEN not in stored and "ghp_" not in stored
    assert ok(alice, "search", SCOPE, SESSION, query="ghp_")["matches"] == []


def test_pipeline_memory_cites_no_session_id(alice: Api, bob: Api) -> None:
    capture(alice, f"{SESSION}:1", "remember: the staging database runs on port 6543")
    generator = StubGenerator(output(memory("the staging database runs on port 6543", f"{SESSION}:1")))

    run_pass(SCOPE, generator)

    listed = bob.post("/v1/memory/entries/list", {"scope_id": SCOPE})
    assert listed.status_code == 200, listed.content
    [hit] = bob.search(SCOPE, "staging database port")["hits"]
    got = bob.post("/v1/memory/entries/get", {"scope_id": SCOPE, "citation": hit["citation"]})
    assert got.status_code == 200
    for body in (listed.json(), bob.search(SCOPE, "staging database port"), got.json()):
        assert SESSION not in json.dumps(body)
    [ref] = got.json()["source_refs"]
    assert ref["name"] == "content" and re.fullmatch(r"ref:[0-9a-f]{32}", ref["source_id"])
    assert ref["source_id"] == opaque_source_ref(SCOPE, f"{SESSION}:1")
    assert ref["source_id"] != opaque_source_ref("git:example/other", f"{SESSION}:1")
    assert SESSION not in json.dumps(list(MemoryEntryVersion.objects.values_list("source_refs", flat=True)))


def test_the_paths_table_covers_every_recovery_operation() -> None:
    # The ownership tests above reach every recovery route; a new one must join them.
    from context_api.operations.recovery import OPERATIONS

    assert sorted(f"/{op.path}" for op in OPERATIONS) == sorted(PATHS.values())


def test_the_upgrade_makes_existing_memory_references_opaque(alice: Api) -> None:
    """Memory written before opaque references named its sources; the migration rewrites them
    (and leaves an already opaque one as it is)."""
    import importlib
    from types import SimpleNamespace

    from django.apps import apps
    from django.db import connection

    migration = importlib.import_module("powercontext.pipeline.migrations.0004_memory_source_refs_opaque")
    alice.remember(SCOPE, "the staging database runs on port 6543")
    version = MemoryEntryVersion.objects.get()
    opaque = opaque_source_ref(SCOPE, "earlier")
    raw = [{"name": "content", "source_id": f"{SESSION}:1"}, {"name": "content", "source_id": opaque}]
    MemoryEntryVersion.objects.filter(pk=version.pk).update(source_refs=raw)

    migration.opaque_refs(apps, SimpleNamespace(connection=connection))

    version.refresh_from_db()
    refs = version.source_refs
    assert refs == [
        {"name": "content", "source_id": opaque_source_ref(SCOPE, f"{SESSION}:1")},
        {"name": "content", "source_id": opaque},
    ]
