"""The served contract (GET /v1/openapi.json, /v1/docs) and the routes behind it.

The served document is compared operation by operation with the shared contract and its pipeline
addendum (CI has ``../shared`` beside the clone), so a drift between them fails the build; and
every contract operation, ``flush_memory`` included, must be routed with its method. The session
recovery operations exist only in this repository (``context_api/contract/
powercontext-recovery.openapi.yaml``): they are compared with that file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import powercontext_client as api_client
import pytest
import yaml
from django.conf import settings
from django.contrib.staticfiles import finders
from django.test import Client
from django.urls import Resolver404, resolve

from context_api.operations import OPERATIONS

CONTRACT_NAME = "powercontext-subset.openapi.yaml"
ADDENDUM_NAME = "powercontext-pipeline.openapi.yaml"
# CI: ../shared beside the clone. A git worktree under <checkout>/wt/<name> finds it one level up.
_CANDIDATES = [Path(settings.BASE_DIR).parent, Path(settings.BASE_DIR).parent.parent]
SHARED_CONTRACT = next(
    (base / "shared" / "contracts" / CONTRACT_NAME for base in _CANDIDATES if (base / "shared").is_dir()),
    _CANDIDATES[0] / "shared" / "contracts" / CONTRACT_NAME,
)
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
# This repository's own addenda (no shared counterpart): session recovery state (seed 004 R-004)
# feedback (issue 30) and the review thread (issue 32).
OWN_ADDENDA = tuple(
    Path(settings.BASE_DIR) / "context_api" / "contract" / name
    for name in (
        "powercontext-recovery.openapi.yaml",
        "powercontext-feedback.openapi.yaml",
        "powercontext-review.openapi.yaml",
    )
)


def _shared() -> dict[str, Any]:
    """The shared contract with the shared pipeline addendum's paths and components added, and
    the repository's own addenda."""
    with SHARED_CONTRACT.open(encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    for path in (SHARED_CONTRACT.with_name(ADDENDUM_NAME), *OWN_ADDENDA):
        with path.open(encoding="utf-8") as handle:
            addendum = yaml.safe_load(handle)
        document["paths"].update(addendum["paths"])
        for section, entries in addendum["components"].items():
            for name, value in entries.items():
                document["components"].setdefault(section, {}).setdefault(name, value)
    return document


def _operations(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (path, method): item[method]
        for path, item in document["paths"].items()
        for method in METHODS
        if method in item
    }


def _resolve_refs(value: Any, components: dict[str, Any], seen: frozenset[str] = frozenset()) -> Any:
    """Inline every local $ref, so operations compare by the schemas they actually use."""
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/"):
            if ref in seen:
                return {"$recursive": ref}
            section, name = ref.removeprefix("#/components/").split("/", 1)
            target = _resolve_refs(components[section][name], components, seen | {ref})
            siblings = {k: _resolve_refs(v, components, seen) for k, v in value.items() if k != "$ref"}
            return {"$ref-target": target, **siblings}
        return {k: _resolve_refs(v, components, seen) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve_refs(v, components, seen) for v in value]
    return value


@pytest.fixture(scope="module")
def served() -> dict[str, Any]:
    response = Client().get("/v1/openapi.json")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    return json.loads(response.content)


def test_the_shared_contract_is_beside_the_clone() -> None:
    assert SHARED_CONTRACT.is_file(), f"missing {SHARED_CONTRACT}: CI must lay ../shared beside the clone"


def test_the_served_document_has_the_shared_contracts_operations(served: dict[str, Any]) -> None:
    shared = _shared()
    assert served["openapi"] == shared["openapi"]
    assert sorted(_operations(served)) == sorted(_operations(shared))


def _shared_keys() -> list[tuple[str, str]]:
    # A missing file is reported by test_the_shared_contract_is_beside_the_clone, not here.
    return sorted(_operations(_shared())) if SHARED_CONTRACT.is_file() else []


@pytest.mark.parametrize("key", _shared_keys(), ids=lambda key: f"{key[1].upper()} {key[0]}")
def test_each_operation_matches_the_shared_contract(served: dict[str, Any], key: tuple[str, str]) -> None:
    shared = _shared()
    mine = _resolve_refs(_operations(served)[key], served["components"])
    theirs = _resolve_refs(_operations(shared)[key], shared["components"])
    assert mine.get("operationId") == theirs.get("operationId")
    assert mine.get("parameters") == theirs.get("parameters"), "query parameters differ"
    assert mine.get("requestBody") == theirs.get("requestBody"), "request schema differs"
    assert sorted(mine["responses"]) == sorted(theirs["responses"]), "status codes differ"
    for status in theirs["responses"]:
        assert mine["responses"][status] == theirs["responses"][status], f"response {status} differs"
    assert mine == theirs


def test_every_contract_operation_is_routed_with_its_method(served: dict[str, Any]) -> None:
    routed = set()
    for (path, method), operation in _operations(served).items():
        try:
            match = resolve(path)
        except Resolver404:
            pytest.fail(f"{operation['operationId']}: {path} is not routed")
        assert match.url_name == operation["operationId"], path
        view = match.func.view_class(**match.func.view_initkwargs)
        assert method in view.http_method_names and hasattr(view, method), (path, method)
        routed.add(operation["operationId"])
    table = set(OPERATIONS) | {"get_liveness", "get_readiness", "get_capabilities", "get_stats"}
    assert routed == table


def test_the_served_document_includes_the_pipeline_addendum(served: dict[str, Any]) -> None:
    operation = served["paths"]["/v1/memory/flush"]["post"]
    assert operation["operationId"] == "flush_memory"
    assert served["components"]["schemas"]["FlushMemoryResponse"]["required"] == [
        "status",
        "previous_cursor",
        "current_cursor",
        "high_watermark",
        "processed_source_count",
    ]


def test_the_served_document_includes_the_recovery_addendum(served: dict[str, Any]) -> None:
    recovery = {
        op["operationId"]
        for (path, _method), op in _operations(served).items()
        if path.startswith("/v1/sessions/")
    }
    assert recovery == {
        "write_session_note",
        "read_session_note",
        "list_session_notes",
        "search_session_notes",
        "list_session_history",
        "search_session_history",
        "read_session_history",
        "get_recovery_hint",
    }
    hint = served["components"]["schemas"]["RecoveryHintResponse"]["properties"]["hint_bytes"]
    assert hint["maximum"] == 4000


def test_the_client_table_agrees_with_the_contract(served: dict[str, Any]) -> None:
    contract = {
        op["operationId"]: (method.upper(), path) for (path, method), op in _operations(served).items()
    }
    assert {name: (op.method, op.path) for name, op in api_client.OPERATIONS.items()} == contract


def test_the_docs_page_uses_a_self_hosted_script() -> None:
    response = Client().get("/v1/docs")
    assert response.status_code == 200
    page = response.content.decode()
    assert "/v1/openapi.json" in page
    # The static storage serves content-hashed names (redoc.standalone.<hash>.js).
    assert re.search(
        r"/static/drf_spectacular_sidecar/redoc/bundles/redoc\.standalone\.(?:[0-9a-f]+\.)?js", page
    )
    assert "https://" not in page and "http://" not in page
    assert finders.find("drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js")


@pytest.mark.parametrize("path", ["/v1/openapi.json", "/v1/docs"])
def test_the_contract_pages_are_get_only(path: str) -> None:
    assert Client().post(path, data="{}", content_type="application/json").status_code == 405
