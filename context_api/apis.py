"""The public /v1 API: one class per operation. Each parses, authorizes, calls one service or
selector, and renders. Errors are raised as domain exceptions and mapped in ``errors``."""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from context_api import render
from context_api.application import PrepareRequest, ScopedContextApplication
from context_api.auth import authenticate
from context_api.builder import DEFAULT_MAX_BYTES, MAX_MAX_BYTES, MIN_MAX_BYTES, SCHEMA
from context_api.validation import (
    NON_BLANK,
    MemoryCitationSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
    StrictObjectField,
    StrictSerializer,
    field_error,
    normalized,
    parse_json_object,
    read_body,
    scope_field,
    validate,
)
from powercontext.exceptions import CapabilityNotSupported
from powercontext.selectors import memory as memory_selectors
from powercontext.services import memory as memory_services
from powercontext.services.sources import CONTENT_SOURCE_TYPE, source_capture

MEMORY_TEXT_MAX_BYTES = 8192
REASON_MAX_CHARS = 512
SUPPORTED_SEARCH_MODES = ("auto", "fts")
ALL_SEARCH_MODES = ("auto", "fts", "vector", "hybrid")


class BaseApi(APIView):
    """Common plumbing: no DRF parsers/authenticators; strict JSON body; our error envelope."""

    authentication_classes: ClassVar[list[Any]] = []
    permission_classes: ClassVar[list[Any]] = []
    success_status = 200

    class InputSerializer(StrictSerializer):
        pass

    def post(self, request: Request) -> Response:
        authenticate(request)
        data = validate(self.InputSerializer, parse_json_object(read_body(request)))
        return Response(self.run(data), status=self.success_status)

    def run(self, data: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError


def _reason(data: dict[str, Any]) -> str | None:
    return normalized(data.get("reason"), "reason", max_chars=REASON_MAX_CHARS, blank_to_none=True)


def _memory_text(data: dict[str, Any]) -> str:
    text = normalized(data["text"], "text", max_bytes=MEMORY_TEXT_MAX_BYTES)
    assert text is not None
    return text


def _kind(data: dict[str, Any]) -> str:
    kind = normalized(data["kind"], "kind", max_chars=128)
    assert kind is not None
    return kind


def _citation(data: dict[str, Any]) -> memory_services.Citation:
    citation = data["citation"]
    ref = citation["memory_ref"]
    return memory_services.Citation(
        family=ref["family"],
        artifact_id=ref["artifact_id"],
        revision=ref["revision"],
        entry_id=citation["entry_id"],
        entry_version_id=citation["entry_version_id"],
    )


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


class CapabilitiesApi(APIView):
    authentication_classes: ClassVar[list[Any]] = []
    permission_classes: ClassVar[list[Any]] = []

    def get(self, request: Request) -> Response:
        authenticate(request)
        return Response(
            {
                "source_types": [CONTENT_SOURCE_TYPE],
                "artifact_families": ["memory", "experience", "skill"],
                "memory_extraction": False,
                "experience_generation": False,
                "managed_skill_generation": False,
                "external_skill_registry": False,
                "handoff_generation": False,
                "search_modes": list(SUPPORTED_SEARCH_MODES),
                "context_versions": [SCHEMA],
            }
        )


# --- sources -----------------------------------------------------------------------------------


class CaptureContentSourceApi(BaseApi):
    success_status = 202

    class InputSerializer(StrictSerializer):
        scope_id = scope_field()
        source_id = StrictCharField(min_length=1, max_length=256, pattern=NON_BLANK)
        content = StrictCharField(min_length=1, max_length=200000, pattern=NON_BLANK)
        metadata = StrictObjectField(required=False, allow_null=True, default=None)

    def run(self, data: dict[str, Any]) -> dict[str, Any]:
        captured = source_capture(
            scope_id=data["scope_id"],
            source_id=data["source_id"],
            content=data["content"],
            metadata=data.get("metadata"),
        )
        return {
            "status": "accepted",
            "source": {"name": captured.source_type, "source_id": captured.source_id},
            "position": captured.position,
        }


# --- memory --------------------------------------------------------------------------------------


class RememberMemoryApi(BaseApi):
    class InputSerializer(StrictSerializer):
        scope_id = scope_field()
        kind = StrictCharField(min_length=1, max_length=128)
        text = StrictCharField(min_length=1)
        reason = StrictCharField(
            max_length=REASON_MAX_CHARS, required=False, allow_null=True, allow_blank=True, default=None
        )
        expected_revision = StrictIntegerField(min_value=1, required=False, allow_null=True, default=None)

    def run(self, data: dict[str, Any]) -> dict[str, Any]:
        mutation = memory_services.memory_remember(
            scope_id=data["scope_id"],
            kind=_kind(data),
            text=_memory_text(data),
            reason=_reason(data),
            expected_revision=data.get("expected_revision"),
        )
        return render.memory_mutation(mutation.revision, mutation.entry)


class SearchMemoryApi(BaseApi):
    class InputSerializer(StrictSerializer):
        scope_id = scope_field()
        query = StrictCharField(min_length=1, max_length=8192)
        limit = StrictIntegerField(min_value=1, max_value=50, required=False, default=10)
        mode = StrictChoiceField(choices=ALL_SEARCH_MODES, required=False, default="auto")

    def run(self, data: dict[str, Any]) -> dict[str, Any]:
        if data["mode"] not in SUPPORTED_SEARCH_MODES:
            raise CapabilityNotSupported(details={"capability": f"search_mode:{data['mode']}"})
        if not NON_BLANK.search(data["query"]):
            raise field_error(["query"], "Must contain a non-whitespace character.", "string_blank")
        result = memory_selectors.memory_search(
            scope_id=data["scope_id"], query=data["query"], limit=data["limit"]
        )
        return {
            "memory": render.memory_ref(result.revision),
            "mode": "fts" if result.revision is not None else None,
            "hits": [
                {
                    "citation": render.citation(hit.revision, hit.entry_id, hit.entry_version_id),
                    "text": hit.text,
                    "score": hit.score,
                    "matched_by": ["fts"],
                }
                for hit in result.hits
            ],
        }


class ListMemoryEntriesApi(BaseApi):
    class InputSerializer(StrictSerializer):
        scope_id = scope_field()
        include_inactive = StrictBooleanField(required=False, default=False)

    def run(self, data: dict[str, Any]) -> dict[str, Any]:
        revision, entries = memory_selectors.memory_list_entries(
            scope_id=data["scope_id"], include_inactive=data["include_inactive"]
        )
        return {"memory": render.memory_ref(revision), "entries": [render.memory_entry(e) for e in entries]}


class GetMemoryEntryApi(BaseApi):
    class InputSerializer(StrictSerializer):
        scope_id = scope_field()
        citation = MemoryCitationSerializer()

    def run(self, data: dict[str, Any]) -> dict[str, Any]:
        citation = _citation(data)
        entry = memory_selectors.memory_get_entry(
            scope_id=data["scope_id"],
            family=citation.family,
            artifact_id=citation.artifact_id,
            revision=citation.revision,
            entry_id=citation.entry_id,
            entry_version_id=citation.entry_version_id,
        )
        return render.memory_entry(entry)


class ReviseMemoryEntryApi(BaseApi):
    class InputSerializer(StrictSerializer):
        scope_id = scope_field()
        citation = MemoryCitationSerializer()
        kind = StrictCharField(min_length=1, max_length=128)
        text = StrictCharField(min_length=1)
        reason = StrictCharField(
            max_length=REASON_MAX_CHARS, required=False, allow_null=True, allow_blank=True, default=None
        )

    def run(self, data: dict[str, Any]) -> dict[str, Any]:
        mutation = memory_services.memory_revise(
            scope_id=data["scope_id"],
            citation=_citation(data),
            kind=_kind(data),
            text=_memory_text(data),
            reason=_reason(data),
        )
        return render.memory_mutation(mutation.revision, mutation.entry)


class RetireMemoryEntryApi(BaseApi):
    class InputSerializer(StrictSerializer):
        scope_id = scope_field()
        citation = MemoryCitationSerializer()
        reason = StrictCharField(
            max_length=REASON_MAX_CHARS, required=False, allow_null=True, allow_blank=True, default=None
        )

    def run(self, data: dict[str, Any]) -> dict[str, Any]:
        mutation = memory_services.memory_retire(
            scope_id=data["scope_id"], citation=_citation(data), reason=_reason(data)
        )
        return render.memory_mutation(mutation.revision, mutation.entry)


class ListMemoryChangesApi(BaseApi):
    class InputSerializer(StrictSerializer):
        scope_id = scope_field()
        since_revision = StrictIntegerField(min_value=0, required=False, allow_null=True, default=None)

    def run(self, data: dict[str, Any]) -> dict[str, Any]:
        since = data.get("since_revision")
        head = memory_selectors.memory_head_revision(scope_id=data["scope_id"])
        if head is None:
            return {"memory": None, "revisions": []}
        if since is None:
            since = head - 1  # no lower bound given: the head revision's own changes
        if since > head:
            raise field_error(
                ["since_revision"],
                "Must not be greater than the current Memory revision.",
                "revision_unknown",
            )
        revision, changes = memory_selectors.memory_list_changes(
            scope_id=data["scope_id"], since_revision=since
        )
        return {
            "memory": render.memory_ref(revision),
            "revisions": [
                {"memory_ref": render.memory_ref(c.revision), "changes": c.changes} for c in changes
            ],
        }


# --- prepared context ---------------------------------------------------------------------------


class PrepareContextApi(BaseApi):
    """``POST /v1/context/prepare``: one call per agent turn; nothing is written or logged."""

    class InputSerializer(StrictSerializer):
        scope_id = scope_field()
        query = StrictCharField(min_length=1, max_length=8192, pattern=NON_BLANK)
        max_bytes = StrictIntegerField(
            min_value=MIN_MAX_BYTES, max_value=MAX_MAX_BYTES, required=False, default=DEFAULT_MAX_BYTES
        )

    def run(self, data: dict[str, Any]) -> dict[str, Any]:
        prepared = _application.prepare(
            PrepareRequest(scope_id=data["scope_id"], query=data["query"], max_bytes=data["max_bytes"])
        )
        return prepared.as_dict()


_application = ScopedContextApplication()
