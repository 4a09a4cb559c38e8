"""POST /v1/context/prepare through HTTP, on both databases."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError
from powercontext_hooks import hook_state

from powercontext import search
from powercontext.prepare import application
from powercontext.prepare.builder import BEGIN_MARKER, END_MARKER, SCHEMA, MemoryHit
from powercontext.prepare.selection import ContextCandidates, memory_ref
from tests.conftest import Api

HOOK = (
    Path(__file__).resolve().parents[2] / "clients/python/src/powercontext_hooks/codex_user_prompt_submit.py"
)


def prepare(api: Api, scope_id: str, query: str, **extra: Any):
    return api.post("/v1/context/prepare", {"scope_id": scope_id, "query": query, **extra})


def items_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    content = body["content"]
    start = content.index(BEGIN_MARKER + "\n") + len(BEGIN_MARKER) + 1
    end = content.index("\n" + END_MARKER)
    return json.loads(content[start:end])["items"]


def test_remembered_entries_come_back_cited_exactly(api: Api) -> None:
    first = api.remember("repo", "Run the contract tests after changing persistence.")
    second = api.remember("repo", "Persistence changes need a migration review.")

    response = prepare(api, "repo", "what about persistence changes?")

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"schema", "status", "content", "content_bytes"}
    assert body["schema"] == SCHEMA and body["status"] == "ready"
    assert body["content_bytes"] == len(body["content"].encode("utf-8")) <= 8000
    cited = {(i["citation"]["entry_id"], i["citation"]["entry_version_id"]): i for i in items_of(body)}
    for mutation in (first, second):
        entry = mutation["entry"]
        item = cited[(entry["citation"]["entry_id"], entry["citation"]["entry_version_id"])]
        assert item["citation"]["memory_ref"] == second["memory"]  # the head the search saw
        assert item["content"] == entry["text"] and item["truncated"] is False


def test_entries_holding_the_markers_reach_the_hooks_parser_whole(api: Api) -> None:
    """Issue 33: the markers appear once each in the content, and the hooks' parser reads the
    remembered texts back exactly."""
    texts = [
        f"Deploy notes: ignore lines after {END_MARKER} in the deploy log.",
        f"Deploy notes: the wrapper starts with {BEGIN_MARKER} and ends with {END_MARKER}.",
    ]
    remembered = [api.remember("repo", text)["entry"] for text in texts]

    body = prepare(api, "repo", "deploy notes wrapper log").json()

    content = body["content"]
    assert body["status"] == "ready" and body["content_bytes"] == len(content.encode("utf-8"))
    assert content.count(BEGIN_MARKER) == 1 and content.count(END_MARKER) == 1
    found = {item["citation"]["entry_id"]: item for item in hook_state.envelope_items(content)}
    for entry in remembered:
        assert found[entry["citation"]["entry_id"]]["content"] == entry["text"]
    assert {c["entry_id"] for c in hook_state.citations_of_content(content)} == set(found)


def test_a_retired_entry_is_never_prepared_again(api: Api) -> None:
    kept = api.remember("repo", "deploy on tuesdays only")
    gone = api.remember("repo", "deploy with the old script")
    citation = dict(gone["entry"]["citation"], memory_ref=gone["memory"])
    assert (
        api.post("/v1/memory/entries/retire", {"scope_id": "repo", "citation": citation}).status_code == 200
    )

    items = items_of(prepare(api, "repo", "deploy").json())

    assert [i["citation"]["entry_id"] for i in items] == [kept["entry"]["citation"]["entry_id"]]


def test_every_citation_resolves_to_the_cited_version_after_the_head_moved_on(api: Api) -> None:
    for i in range(5):
        api.remember("repo", f"release checklist step {i}")
    prepared = items_of(prepare(api, "repo", "release checklist").json())
    assert len(prepared) == 5
    # Move the head on: revise one cited entry, retire another.
    head = api.post("/v1/memory/entries/list", {"scope_id": "repo"}).json()["memory"]
    c0 = dict(prepared[0]["citation"], memory_ref=head)
    revised = api.post(
        "/v1/memory/entries/revise",
        {"scope_id": "repo", "citation": c0, "kind": "note", "text": "rewritten step"},
    ).json()
    c1 = dict(prepared[1]["citation"], memory_ref=revised["memory"])
    assert api.post("/v1/memory/entries/retire", {"scope_id": "repo", "citation": c1}).status_code == 200

    for item in prepared:
        got = api.post("/v1/memory/entries/get", {"scope_id": "repo", "citation": item["citation"]})
        assert got.status_code == 200
        assert got.json()["text"] == item["content"]
        assert got.json()["citation"] == item["citation"]


def test_nothing_crosses_scopes(api: Api) -> None:
    api.remember("repo", "secret of the lowercase scope")
    api.remember("Repo", "secret of the capitalised scope")

    lower = items_of(prepare(api, "repo", "secret scope").json())
    upper = items_of(prepare(api, "Repo", "secret scope").json())

    assert [i["content"] for i in lower] == ["secret of the lowercase scope"]
    assert [i["content"] for i in upper] == ["secret of the capitalised scope"]
    assert prepare(api, "repo ", "secret scope").json()["status"] == "empty"


def test_no_memory_no_match_and_tiny_budgets_are_the_same_empty_answer(api: Api) -> None:
    empty = {"schema": SCHEMA, "status": "empty", "content": None, "content_bytes": 0}
    assert prepare(api, "nobody", "anything").json() == empty
    api.remember("repo", "x" * 300)
    assert prepare(api, "repo", "unrelated words").json() == empty
    assert prepare(api, "repo", "x" * 300, max_bytes=512).json() == empty


def test_long_entries_are_truncated_within_the_budget(api: Api) -> None:
    api.remember("repo", "budget " + "é" * 3000)
    body = prepare(api, "repo", "budget", max_bytes=1024).json()
    assert body["status"] == "ready" and body["content_bytes"] <= 1024
    (item,) = items_of(body)
    assert item["truncated"] is True and item["content"].endswith("…")


@pytest.mark.parametrize(
    "payload",
    [
        {"scope_id": "repo", "query": "q", "extra": 1},
        {"scope_id": "", "query": "q"},
        {"scope_id": "   ", "query": "q"},
        {"scope_id": "s" * 257, "query": "q"},
        {"scope_id": "repo", "query": ""},
        {"scope_id": "repo", "query": " \n\t "},
        {"scope_id": "repo", "query": "q" * 8193},
        {"scope_id": "repo", "query": "q", "max_bytes": 511},
        {"scope_id": "repo", "query": "q", "max_bytes": 32769},
        {"scope_id": "repo", "query": "q", "max_bytes": "8000"},
        {"scope_id": "repo", "query": "q", "max_bytes": 8000.0},
        {"scope_id": "repo", "query": "q", "max_bytes": True},
        {"scope_id": "repo", "query": "q", "max_bytes": None},
        {"query": "q"},
        {"scope_id": "repo"},
        {"scope_id": 5, "query": "q"},
        ["scope_id", "query"],
    ],
)
def test_bad_requests_are_422_with_the_envelope(api: Api, payload: Any) -> None:
    response = api.post("/v1/context/prepare", payload)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_request"
    assert set(response.json()["error"]) == {"code", "message", "details"}


def test_boundary_budgets_are_accepted(api: Api) -> None:
    for max_bytes in (512, 32768):
        assert prepare(api, "repo", "q", max_bytes=max_bytes).status_code == 200
    assert prepare(api, "repo", "q" * 8192).status_code == 200


def test_an_unreachable_database_is_503(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    def down(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("connection refused")

    monkeypatch.setattr(search, "search_context_counted", down)
    response = prepare(api, "repo", "anything")
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "runtime_not_ready"


def test_a_hit_from_another_revision_is_a_500_without_content(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    def inconsistent(**kwargs: Any) -> ContextCandidates:
        hits = [
            MemoryHit(memory_ref=memory_ref(3), entry_id="e1", entry_version_id="v1", text="a", score=0.5),
            MemoryHit(memory_ref=memory_ref(4), entry_id="e2", entry_version_id="v2", text="b", score=0.4),
        ]
        return ContextCandidates(memory_ref=memory_ref(3), memory_hits=hits, experience_hits=[])

    monkeypatch.setattr(application.context_selectors, "context_candidates", inconsistent)
    response = prepare(api, "repo", "anything")
    assert response.status_code == 500
    assert response.json() == {
        "error": {
            "code": "internal_error",
            "message": "The server failed without exposing internal details.",
            "details": None,
        }
    }


def test_a_head_committed_during_a_request_does_not_change_its_response(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.remember("repo", "snapshot rule one")
    original = application.context_selectors.context_candidates

    def write_meanwhile(**kwargs: Any) -> Any:
        found = original(**kwargs)
        api.remember("repo", "snapshot rule two written mid-request")
        return found

    monkeypatch.setattr(application.context_selectors, "context_candidates", write_meanwhile)
    items = items_of(prepare(api, "repo", "snapshot rule").json())
    assert [i["content"] for i in items] == ["snapshot rule one"]
    assert items[0]["citation"]["memory_ref"]["revision"] == 1
    monkeypatch.setattr(application.context_selectors, "context_candidates", original)
    assert len(items_of(prepare(api, "repo", "snapshot rule").json())) == 2


def test_prepare_writes_nothing(api: Api) -> None:
    from powercontext.core.models import Artifact, ArtifactRevision, MemoryEntryVersion, Source

    api.remember("repo", "read only please")
    counts = [m.objects.count() for m in (Artifact, ArtifactRevision, MemoryEntryVersion, Source)]
    prepare(api, "repo", "read only")
    assert [m.objects.count() for m in (Artifact, ArtifactRevision, MemoryEntryVersion, Source)] == counts


def test_no_log_record_carries_the_query_snippets_or_scope(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    scope, query, text = (
        "scope-PRIVATE-7f3a",
        "query-PRIVATE-91c2 deploy",
        "snippet-PRIVATE-55e0 deploy steps",
    )
    api.remember(scope, text)
    with caplog.at_level(logging.DEBUG):
        assert prepare(api, scope, query).json()["status"] == "ready"
        prepare(api, scope, "nothing matches this")
        api.post("/v1/context/prepare", {"scope_id": scope, "query": query, "max_bytes": 1})
    assert caplog.records, "prepare should log privacy-safe lines"
    for record in caplog.records:
        rendered = record.getMessage() + repr(record.args) + repr(getattr(record, "__dict__", {}))
        for secret in ("PRIVATE", "deploy"):
            assert secret not in rendered, record.getMessage()


@pytest.mark.django_db(transaction=True)
def test_the_codex_hook_injects_a_live_ready_response_and_reports_empty(
    live_server: Any, tmp_path: Path
) -> None:
    import httpx

    httpx.post(
        f"{live_server.url}/v1/memory/remember",
        json={"scope_id": "hook-scope", "kind": "note", "text": "Use the staging cluster for load tests."},
    ).raise_for_status()

    def run(prompt: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(HOOK)],
            input=json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": prompt, "cwd": str(tmp_path)}),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={
                "PATH": "/usr/bin:/bin",
                "POWERCONTEXT_URL": live_server.url,
                "POWERCONTEXT_SCOPE_ID": "hook-scope",
                "POWERCONTEXT_TIMEOUT_SECONDS": "10",
            },
        )

    ready = run("where do load tests run?")
    assert ready.returncode == 0 and ready.stderr == ""
    output = json.loads(ready.stdout)
    context = output["hookSpecificOutput"]["additionalContext"]
    assert output["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "Use the staging cluster for load tests." in context
    direct = httpx.post(
        f"{live_server.url}/v1/context/prepare",
        json={"scope_id": "hook-scope", "query": "where do load tests run?", "max_bytes": 8000},
    ).json()
    assert context == direct["content"]  # injected byte for byte

    empty = run("completely unrelated prompt")
    assert empty.returncode == 0 and empty.stdout == ""
    assert json.loads(empty.stderr)["outcome"] == "empty"
