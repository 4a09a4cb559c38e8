"""The public /v1 API over HTTP: one view per operation of the operation table
(``context_api.operations``), plus health and capabilities. Each view parses the JSON body,
lets the operation authorize, validate, call one service or selector and render; errors are
domain exceptions mapped in ``errors``."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from context_api.auth import authenticate
from context_api.errors import retry_after
from context_api.guards import V1Api, check_browser_origin, query_payload
from context_api.operations import Operation
from context_api.operations import stats as stats_operations
from context_api.validation import parse_json_object, read_body
from powercontext import search
from powercontext.core import heartbeat
from powercontext.core.db_faults import answer_limit, fault_of
from powercontext.core.exceptions import PowerContextError
from powercontext.core.families import Family
from powercontext.memory.sources import CONTENT_SOURCE_TYPE
from powercontext.pipeline import generators
from powercontext.prepare.builder import SCHEMA

logger = logging.getLogger("powercontext.health")


class OperationApi(V1Api):
    """``POST`` of one contract operation: no DRF parsers/authenticators; strict JSON body; our
    error envelope. ``operation`` is bound per route by ``as_view(operation=...)``."""

    authentication_classes = ()
    permission_classes = ()
    operation: Operation | None = None

    def __init__(self, **kwargs: object) -> None:
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
        """A GET operation (``get_stats``): its payload is the query string."""
        assert self.operation is not None
        caller = self.operation.authorize(request)
        body = self.operation.call(caller, query_payload(request))
        return Response(body, status=self.operation.status, headers=dict(self.operation.headers))


# GET /v1/stats runs through the operation machinery (authorization, strict validation, the token
# scope check) but is not in OPERATIONS, the table of JSON-body operations (and MCP tools).
get_stats_view = OperationApi.as_view(operation=stats_operations.get_stats)


# --- health and capabilities -----------------------------------------------------------------


class LivenessApi(APIView):
    authentication_classes = ()
    permission_classes = ()

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


def _database_writable() -> bool:
    """One small write in its own transaction, bounded by POWERCONTEXT_READY_TIMEOUT_MS on
    PostgreSQL: a full disk, a read-only replica or a lock pile-up make the probe fail."""
    try:
        heartbeat.write_probe(timeout_ms=settings.POWERCONTEXT_READY_TIMEOUT_MS)
    except Exception as exc:
        cause = exc.code if isinstance(exc, PowerContextError) else (fault_of(exc) or "error")
        logger.warning("readiness write failed cause=%s error_class=%s", cause, type(exc).__name__)
        return False
    return True


class ReadinessApi(APIView):
    """Can this process serve? The database answers, accepts a write and is migrated."""

    authentication_classes = ()
    permission_classes = ()

    def get(self, request: Request) -> Response:
        # A hung server: each check gives up after the readiness timeout, and a check that gave
        # up leaves the next ones unknown, so the answer comes within about that timeout.
        with answer_limit(settings.POWERCONTEXT_READY_TIMEOUT_MS / 1000):
            reachable, migrated = _database_ready()
            writable = reachable and migrated and _database_writable()
        checks = {
            "database": "ready" if reachable else "unreachable",
            "migrations": "ready" if migrated else ("unknown" if not reachable else "pending"),
            "writes": "ready" if writable else ("unknown" if not (reachable and migrated) else "failing"),
        }
        ready = reachable and migrated and writable
        return Response(
            {"status": "ready" if ready else "not_ready", "checks": checks},
            status=200 if ready else 503,
            headers=None if ready else retry_after(),
        )


class CapabilitiesApi(APIView):
    authentication_classes = ()
    permission_classes = ()

    def get(self, request: Request) -> Response:
        check_browser_origin(request)  # as every /v1 view (V1Api); GET carries no body to check
        authenticate(request)
        return Response(
            {
                "source_types": [CONTENT_SOURCE_TYPE],
                "artifact_families": [family.value for family in Family],
                # The background pipeline extracts Memory and proposes Experience candidates
                # unless its generator is off.
                "memory_extraction": generators.enabled(),
                "experience_generation": generators.enabled(),
                "managed_skill_generation": False,
                "external_skill_registry": False,
                "handoff_generation": False,
                "search_modes": list(search.available_modes()),
                "context_versions": [SCHEMA],
            }
        )
