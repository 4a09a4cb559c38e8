"""The public /v1 API over HTTP: one view per operation of the operation table
(``context_api.operations``), plus health and capabilities. Each view parses the JSON body,
lets the operation authorize, validate, call one service or selector and render; errors are
domain exceptions mapped in ``errors``."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, ClassVar

import yaml
from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from context_api.auth import authenticate
from context_api.builder import SCHEMA
from context_api.operations import Operation
from context_api.operations import stats as stats_operations
from context_api.operations.memory import SUPPORTED_SEARCH_MODES
from context_api.validation import parse_json_object, read_body
from powercontext.exceptions import InvalidRequest, OriginForbidden, UnsupportedMediaType
from powercontext.families import Family
from powercontext.services.sources import CONTENT_SOURCE_TYPE

JSON_MEDIA_TYPE = "application/json"


def check_browser_origin(request: Any) -> None:
    """Refuse requests a browser sends on behalf of another site (403 ``origin_forbidden``).

    A browser page on any site can reach the API on 127.0.0.1, so a request that names a foreign
    ``Origin`` (one not in ``POWERCONTEXT_ALLOWED_ORIGINS``) or that the browser itself labels
    ``Sec-Fetch-Site: cross-site`` is refused before anything else happens. Agents, hooks and
    ``curl`` send neither header.
    """
    origin = request.META.get("HTTP_ORIGIN")
    if origin is not None:
        allowed = {o.lower() for o in settings.POWERCONTEXT_ALLOWED_ORIGINS}
        if origin.strip().rstrip("/").lower() not in allowed:
            raise OriginForbidden()
    if request.META.get("HTTP_SEC_FETCH_SITE", "").strip().lower() == "cross-site":
        raise OriginForbidden()


def check_json_body(request: Any) -> None:
    """A body-carrying request must declare ``application/json`` (parameters such as charset
    allowed), else 415. HTML forms can only send text/plain, urlencoded or multipart bodies
    without a CORS preflight, so this closes cross-site form posts. A POST with no body at all
    (and so no type) carries nothing to write; it gets the usual 422 for a missing JSON object."""
    if request.method != "POST":
        return
    media_type = request.META.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower()
    if media_type == JSON_MEDIA_TYPE or (not media_type and not _has_body(request)):
        return
    raise UnsupportedMediaType()


def _has_body(request: Any) -> bool:
    if "HTTP_TRANSFER_ENCODING" in request.META:
        return True
    length = request.META.get("CONTENT_LENGTH") or "0"
    return not length.isdigit() or int(length) > 0


def query_payload(request: Any) -> dict[str, Any]:
    """A GET operation's query string as a payload: each parameter at most once."""
    payload: dict[str, Any] = {}
    for name, values in request.GET.lists():
        if len(values) != 1:
            raise InvalidRequest(
                details={
                    "errors": [{"loc": ["query", name], "msg": "Must be given once.", "type": "repeated"}]
                }
            )
        payload[name] = values[0]
    return payload


class V1Api(APIView):
    """Base of every /v1 view: our envelope, no DRF authenticators, and the browser guards
    (Origin / Sec-Fetch-Site, JSON-only bodies) before any handler runs."""

    authentication_classes: ClassVar[list[Any]] = []
    permission_classes: ClassVar[list[Any]] = []

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        check_browser_origin(request)
        check_json_body(request)
        super().initial(request, *args, **kwargs)


class OperationApi(V1Api):
    """``POST`` of one contract operation: no DRF parsers/authenticators; strict JSON body; our
    error envelope. ``operation`` is bound per route by ``as_view(operation=...)``."""

    operation: Operation | None = None

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        assert self.operation is not None
        # Each route answers its operation's one method (405 for any other).
        self.http_method_names = [self.operation.method.lower(), "options"]

    def post(self, request: Request) -> Response:
        assert self.operation is not None
        caller = self.operation.authorize(request)
        body = self.operation.call(caller, parse_json_object(read_body(request)))
        return Response(body, status=self.operation.status, headers=dict(self.operation.headers))

    def get(self, request: Request) -> Response:
        assert self.operation is not None
        caller = self.operation.authorize(request)
        body = self.operation.call(caller, query_payload(request))
        return Response(body, status=self.operation.status, headers=dict(self.operation.headers))


# --- health and capabilities -----------------------------------------------------------------


class LivenessApi(APIView):
    authentication_classes: ClassVar[list[Any]] = []
    permission_classes: ClassVar[list[Any]] = []

    def get(self, request: Request) -> Response:
        return Response({"status": "ok"})


_migrated = False


def _database_ready() -> tuple[bool, bool]:
    """(reachable, migrated). A migrated database stays migrated, so that answer is cached."""
    global _migrated
    try:
        connection.ensure_connection()
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception:
        return False, False
    if not _migrated:
        try:
            executor = MigrationExecutor(connection)
            _migrated = not executor.migration_plan(executor.loader.graph.leaf_nodes())
        except Exception:
            return False, False
    return True, _migrated


class ReadinessApi(APIView):
    authentication_classes: ClassVar[list[Any]] = []
    permission_classes: ClassVar[list[Any]] = []

    def get(self, request: Request) -> Response:
        reachable, migrated = _database_ready()
        checks = {
            "database": "ready" if reachable else "unreachable",
            "migrations": "ready" if migrated else ("unknown" if not reachable else "pending"),
        }
        ready = reachable and migrated
        return Response(
            {"status": "ready" if ready else "not_ready", "checks": checks}, status=200 if ready else 503
        )


# GET /v1/stats runs through the operation machinery (authorization, strict validation, the token
# scope check) but is not in OPERATIONS, the table of JSON-body operations (and MCP tools).
get_stats_view = OperationApi.as_view(operation=stats_operations.get_stats)


class CapabilitiesApi(V1Api):
    def get(self, request: Request) -> Response:
        authenticate(request)
        return Response(
            {
                "source_types": [CONTENT_SOURCE_TYPE],
                "artifact_families": [family.value for family in Family],
                "memory_extraction": False,
                "experience_generation": False,
                "managed_skill_generation": False,
                "external_skill_registry": False,
                "handoff_generation": False,
                "search_modes": list(SUPPORTED_SEARCH_MODES),
                "context_versions": [SCHEMA],
            }
        )


# --- the served contract ---------------------------------------------------------------------

CONTRACT_PATH = Path(__file__).resolve().parent / "contract" / "powercontext.openapi.yaml"


@functools.cache
def openapi_json() -> bytes:
    """The repo's OpenAPI document as JSON, converted once per process."""
    with CONTRACT_PATH.open(encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def openapi_document(request: HttpRequest) -> HttpResponse:
    """``GET /v1/openapi.json``: the wire contract this server implements."""
    if request.method not in ("GET", "HEAD"):
        return HttpResponse(status=405, headers={"Allow": "GET, HEAD"})
    return HttpResponse(openapi_json(), content_type="application/json")


def api_docs(request: HttpRequest) -> HttpResponse:
    """``GET /v1/docs``: Redoc over the served document; its script is a local static file."""
    if request.method not in ("GET", "HEAD"):
        return HttpResponse(status=405, headers={"Allow": "GET, HEAD"})
    return render(request, "context_api/docs.html")
