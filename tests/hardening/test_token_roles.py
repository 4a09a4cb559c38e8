"""Token privileges as documented (issue 20, N11; issue 33): an agent token reads, captures,
remembers, revises, retires (a new revision: nothing is lost) and proposes, within its scopes;
flushing needs an operator or a reviewer token; in service mode tokens are required by default.
MCP lists exactly the tools an agent token may call."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from powercontext.core.models import ApiToken
from tests.api.helpers import assert_error
from tests.hardening.processes import child_env, run_python

SCOPE = "roles"


def _token(*args: str) -> str:
    out = io.StringIO()
    call_command("create_api_token", *args, stdout=out)
    return out.getvalue().splitlines()[-1]


def _remembered(api: Any) -> dict[str, Any]:
    body = api.remember(SCOPE, "The build uses make.")
    return {"scope_id": SCOPE, "citation": body["entry"]["citation"]}


@pytest.mark.django_db
def test_an_agent_token_remembers_revises_and_retires_but_may_not_flush(api: Any) -> None:
    api.token = _token("ci-bot")
    retire = _remembered(api)

    response = api.post("/v1/memory/entries/retire", retire)

    assert response.status_code == 200, response.content
    assert response.json()["entry"]["state"] == "inactive"
    # Nothing is lost: the retired version's exact citation still resolves.
    again = api.post("/v1/memory/entries/get", {"scope_id": SCOPE, "citation": retire["citation"]})
    assert again.status_code == 200, again.content
    assert again.json()["text"] == "The build uses make."
    assert_error(api.post("/v1/memory/flush", {"scope_id": SCOPE}), 403, "forbidden")
    assert ApiToken.objects.get().role == "agent"


@pytest.mark.django_db
def test_an_agent_token_retires_only_within_its_scopes(api: Any) -> None:
    retire = _remembered(api)
    api.token = _token("ci-bot", "--scope", "elsewhere")

    assert_error(api.post("/v1/memory/entries/retire", retire), 403, "scope_forbidden")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "args", [("ops", "--operator"), ("alice", "--reviewer")], ids=["operator", "reviewer"]
)
def test_an_operator_or_reviewer_token_may_retire(api: Any, args: tuple[str, ...]) -> None:
    api.token = _token(*args)
    retire = _remembered(api)

    response = api.post("/v1/memory/entries/retire", retire)

    assert response.status_code == 200, response.content


@pytest.mark.django_db
def test_without_a_token_where_tokens_are_optional_the_local_caller_may_retire(api: Any) -> None:
    retire = _remembered(api)

    assert api.post("/v1/memory/entries/retire", retire).status_code == 200


def _mcp(client: Any, token: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    response = client.post(
        "/mcp",
        data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


@pytest.mark.django_db
def test_an_agent_token_retires_over_mcp_too(api: Any, client: Any) -> None:
    retire = _remembered(api)
    token = _token("ci-bot")

    body = _mcp(client, token, "tools/call", {"name": "retire_memory_entry", "arguments": retire})

    result = body["result"]
    assert result["isError"] is False, result
    assert result["structuredContent"]["entry"]["state"] == "inactive"


@pytest.mark.django_db
def test_every_listed_tool_is_one_an_agent_token_may_call(client: Any) -> None:
    """The tool list and the authorization agree: an agent token calling any listed tool gets
    past authorization (here to the arguments' validation), never ``forbidden``; the operator
    and reviewer operations are not listed."""
    token = _token("ci-bot")

    listed = [tool["name"] for tool in _mcp(client, token, "tools/list", {})["result"]["tools"]]

    assert "retire_memory_entry" in listed
    assert not {"flush_memory", "approve_artifact_candidate", "prepare_context"} & set(listed)
    for name in listed:
        result = _mcp(client, token, "tools/call", {"name": name, "arguments": {}})["result"]
        assert result["isError"] is True, name
        assert result["structuredContent"]["error"]["code"] == "invalid_request", (name, result)


@pytest.mark.django_db
def test_flush_is_not_a_tool(client: Any) -> None:
    token = _token("ops", "--operator")

    body = _mcp(client, token, "tools/call", {"name": "flush_memory", "arguments": {"scope_id": SCOPE}})

    assert body["error"]["code"] == -32602


def _require_token(tmp_path: Path, **variables: str) -> bool:
    code = "import django; django.setup(); from django.conf import settings; print(settings.POWERCONTEXT_REQUIRE_TOKEN)"
    result = run_python(code, child_env(tmp_path, **variables))
    assert result.returncode == 0, result.stderr
    return result.stdout.strip() == "True"


def test_tokens_are_required_by_default_in_service_mode_only(tmp_path: Path) -> None:
    key = "a-roles-test-secret-key-" + "0123456789abcdef" * 3
    assert _require_token(tmp_path) is False  # the embedded default
    assert _require_token(tmp_path, CELERY_BROKER_URL="redis://127.0.0.1:1/0", SECRET_KEY=key) is True
    assert _require_token(tmp_path, DATABASE_URL="postgres://u:p@127.0.0.1:1/db", SECRET_KEY=key) is True
    assert (
        _require_token(
            tmp_path,
            DATABASE_URL="postgres://u:p@127.0.0.1:1/db",
            SECRET_KEY=key,
            POWERCONTEXT_REQUIRE_TOKEN="false",
        )
        is False
    )
