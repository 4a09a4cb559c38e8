"""Token privileges as documented (issue 20, N11): an agent token reads, captures, remembers,
revises and proposes; retiring Memory and flushing need an operator or a reviewer token; in
service mode tokens are required by default."""

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
def test_an_agent_token_remembers_and_revises_but_may_not_retire_or_flush(api: Any) -> None:
    api.token = _token("ci-bot")
    retire = _remembered(api)

    assert_error(api.post("/v1/memory/entries/retire", retire), 403, "forbidden")
    assert_error(api.post("/v1/memory/flush", {"scope_id": SCOPE}), 403, "forbidden")
    assert ApiToken.objects.get().role == "agent"


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


@pytest.mark.django_db
def test_the_operator_rule_holds_over_mcp_too(api: Any, client: Any) -> None:
    retire = _remembered(api)
    token = _token("ci-bot")
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "retire_memory_entry", "arguments": retire},
    }

    response = client.post(
        "/mcp", data=json.dumps(call), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )

    result = response.json()["result"]
    assert result["isError"] is True and "forbidden" in json.dumps(result)


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
