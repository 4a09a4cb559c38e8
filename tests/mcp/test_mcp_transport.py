"""The /mcp HTTP and JSON-RPC rules, through Django's test client (fast, both databases)."""

from __future__ import annotations

import json
import logging
from typing import Any

import jsonschema
import pytest
from django.test import Client

from context_api.mcp import schema
from powercontext.core.models import ApiToken
from powercontext.core.tokens import new_token, token_digest

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def post(client: Client, body: Any, raw: str | None = None, **headers: str) -> Any:
    data = raw if raw is not None else json.dumps(body)
    return client.post("/mcp", data=data, content_type="application/json", **headers)


def call(name: str, arguments: Any = None, id: int = 7) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}


def rpc_error(response: Any, status: int, code: int) -> dict[str, Any]:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["error"]["code"] == code, body
    return body


@pytest.fixture
def client(db: None) -> Client:
    return Client()


def make_token() -> str:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create(username="agent")
    token = new_token()
    ApiToken.objects.create(user=user, name="", digest=token_digest(token), prefix=token[:8])
    return token


def test_get_and_delete_answer_405_with_allow(client: Client) -> None:
    for response in (client.get("/mcp"), client.delete("/mcp")):
        assert response.status_code == 405 and response["Allow"] == "POST"


def test_post_answers_at_slash_mcp_and_the_slash_form_never_redirects(client: Client) -> None:
    assert post(client, {"jsonrpc": "2.0", "id": 1, "method": "ping"}).status_code == 200
    slashed = client.post("/mcp/", data="{}", content_type="application/json")
    assert slashed.status_code == 404 and not slashed.has_header("Location")


def test_initialize_answers_the_clients_supported_version_else_the_latest(client: Client) -> None:
    answered = post(client, INIT).json()["result"]
    assert answered["protocolVersion"] == "2025-06-18"
    assert answered["serverInfo"]["name"] == "powercontext"
    assert answered["capabilities"]["tools"] == {"listChanged": False}
    future = dict(INIT, params=dict(INIT["params"], protocolVersion="2099-01-01"))
    assert post(client, future).json()["result"]["protocolVersion"] == "2025-11-25"


def test_an_unsupported_protocol_version_header_is_400(client: Client) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    rpc_error(post(client, ping, HTTP_MCP_PROTOCOL_VERSION="1999-01-01"), 400, -32600)
    assert post(client, ping, HTTP_MCP_PROTOCOL_VERSION="2025-11-25").status_code == 200
    assert post(client, ping).status_code == 200  # absent: the spec's default version


def test_a_session_id_from_the_client_is_ignored(client: Client) -> None:
    response = post(client, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, HTTP_MCP_SESSION_ID="abc")
    assert response.status_code == 200 and not response.has_header("Mcp-Session-Id")


def test_a_foreign_origin_is_refused_and_an_allowed_one_served(client: Client, settings: Any) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    rpc_error(post(client, ping, HTTP_ORIGIN="https://evil.example"), 403, -32003)
    settings.POWERCONTEXT_ALLOWED_ORIGINS = ["http://127.0.0.1:8000"]
    assert post(client, ping, HTTP_ORIGIN="http://127.0.0.1:8000").status_code == 200
    rpc_error(post(client, ping, HTTP_ORIGIN="https://evil.example"), 403, -32003)


def test_a_required_token_is_checked_on_every_post(client: Client, settings: Any) -> None:
    settings.POWERCONTEXT_REQUIRE_TOKEN = True
    token = make_token()
    for body in (INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"}, call("search_memory")):
        response = post(client, body)
        rpc_error(response, 401, -32001)
        assert response["WWW-Authenticate"] == "Bearer"
    rpc_error(post(client, INIT, HTTP_AUTHORIZATION="Bearer pct_wrong"), 401, -32001)
    assert post(client, INIT, HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200


def test_an_invalid_token_is_401_even_when_none_is_required(client: Client) -> None:
    response = post(client, INIT, HTTP_AUTHORIZATION="Bearer pct_wrong")
    rpc_error(response, 401, -32001)
    assert response["WWW-Authenticate"] == "Bearer"


def test_json_rpc_errors(client: Client) -> None:
    rpc_error(post(client, None, raw="{not json"), 400, -32700)
    rpc_error(post(client, {"id": 1, "method": "ping"}), 400, -32600)
    rpc_error(post(client, {"jsonrpc": "2.0", "id": None, "method": "ping"}), 400, -32600)
    rpc_error(post(client, "ping"), 400, -32600)
    unknown = rpc_error(post(client, {"jsonrpc": "2.0", "id": "a", "method": "resources/list"}), 200, -32601)
    assert unknown["id"] == "a"
    rpc_error(post(client, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {}}), 200, -32602)


def test_unknown_and_excluded_tools_are_invalid_params(client: Client) -> None:
    for name in (
        "no_such_tool",
        "prepare_context",
        "approve_artifact_candidate",
        "revise_artifact_candidate",
    ):
        rpc_error(post(client, call(name, {"scope_id": "repo"})), 200, -32602)


def test_notifications_and_client_responses_get_202_and_no_body(client: Client) -> None:
    for body in (
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        {"jsonrpc": "2.0", "id": 5, "result": {}},
    ):
        response = post(client, body)
        assert response.status_code == 202 and response.content == b""


def test_batches_are_answered_where_the_protocol_version_has_them(client: Client) -> None:
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        call("search_memory", {"scope_id": "repo", "query": "anything"}, id=2),
        {"jsonrpc": "2.0", "id": 3, "method": "nope"},
    ]
    answers = post(client, batch, HTTP_MCP_PROTOCOL_VERSION="2025-03-26").json()
    assert [a["id"] for a in answers] == [1, 2, 3]
    assert answers[1]["result"]["isError"] is False and answers[2]["error"]["code"] == -32601
    assert post(client, batch).status_code == 200  # no header: 2025-03-26, which has batches
    only_notes = post(client, [{"jsonrpc": "2.0", "method": "notifications/initialized"}])
    assert only_notes.status_code == 202
    rpc_error(post(client, []), 400, -32600)
    for version in ("2025-06-18", "2025-11-25"):
        rpc_error(post(client, batch, HTTP_MCP_PROTOCOL_VERSION=version), 400, -32600)


def test_a_server_error_inside_a_tool_is_an_is_error_result_not_a_500(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from context_api.operations import OPERATIONS

    op = OPERATIONS["search_memory"]

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(type(op), "call", lambda self, caller, payload: boom())
    response = post(client, call("search_memory", {"scope_id": "repo", "query": "x"}))
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == "internal_error"


def test_the_access_log_names_the_tool_never_its_arguments(client: Client, caplog: Any) -> None:
    with caplog.at_level(logging.INFO, logger="powercontext.access"):
        post(client, call("search_memory", {"scope_id": "secret-scope", "query": "secret query"}))
        post(client, call("secret_tool_name", {"scope_id": "secret-scope"}))
    lines = [r.getMessage() for r in caplog.records if r.name == "powercontext.access"]
    assert any("route=mcp tool=search_memory " in line for line in lines), lines
    assert not any("secret" in line for line in lines), lines


def test_capabilities_stay_truthful(client: Client) -> None:
    body = client.get("/v1/capabilities").json()
    capabilities = schema.to_json_schema(
        schema.contract()["components"]["schemas"]["Capabilities"], schema.contract()
    )
    jsonschema.validate(body, capabilities)
    assert body["context_versions"] == ["powercontext.prepared-context.v1"]


def test_every_tool_input_schema_is_its_contract_request_schema() -> None:
    from context_api.mcp import tools

    for tool in tools.tools():
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        assert tool.output_schema is not None
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)
    nullable = schema.input_schema("capture_content_source")["properties"]["metadata"]
    assert nullable["type"] == ["object", "null"] and nullable["additionalProperties"] is True


# --- issue 20: N6, N7 and strict JSON ------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""]
)
def test_a_body_that_is_not_json_is_415(client: Client, content_type: str) -> None:
    response = client.post("/mcp", data=json.dumps(INIT), content_type=content_type)

    rpc_error(response, 415, -32600)


def test_a_cross_site_fetch_is_refused_like_v1(client: Client) -> None:
    rpc_error(post(client, INIT, HTTP_SEC_FETCH_SITE="cross-site"), 403, -32003)
    assert post(client, INIT, HTTP_SEC_FETCH_SITE="same-origin").status_code == 200
    assert post(client, INIT, HTTP_SEC_FETCH_SITE="none").status_code == 200


def test_a_batch_over_the_limit_is_an_invalid_request_and_runs_nothing(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from context_api.mcp import transport

    ran: list[str] = []
    monkeypatch.setattr(transport, "_run", lambda request, message, version: ran.append(message.method) or {})
    batch = [{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(transport.BATCH_MAX + 1)]

    rpc_error(post(client, batch, HTTP_MCP_PROTOCOL_VERSION="2025-03-26"), 400, -32600)
    assert ran == []
    ok = post(client, batch[: transport.BATCH_MAX], HTTP_MCP_PROTOCOL_VERSION="2025-03-26")
    assert ok.status_code == 200 and len(ok.json()) == transport.BATCH_MAX


@pytest.mark.parametrize(
    "raw",
    [
        '{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": NaN}}',
        '{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": Infinity}}',
        '{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": -Infinity}}',
        '{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": 1e400}}',
        '{"jsonrpc": "2.0", "id": 1, "id": 2, "method": "ping"}',
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "remember_memory",'
        ' "arguments": {"scope_id": "repo", "text": "x", "metadata": {"score": NaN}}}}',
    ],
    ids=["nan", "infinity", "minus infinity", "overflow", "duplicate key", "nan in metadata"],
)
def test_non_strict_json_is_a_parse_error(client: Client, raw: str) -> None:
    rpc_error(post(client, None, raw=raw), 400, -32700)
