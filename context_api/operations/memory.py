"""Memory, source and prepare operations of the /v1 contract."""

from __future__ import annotations

from typing import Any

from context_api import metrics, render
from context_api.operations.base import Caller, Operation, operation
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
    scope_field,
)
from powercontext import search
from powercontext.core.exceptions import CapabilityNotSupported
from powercontext.core.models import owner_key
from powercontext.memory import selectors as memory_selectors
from powercontext.memory import services as memory_services
from powercontext.memory.sources import source_capture
from powercontext.prepare.application import PrepareRequest, ScopedContextApplication
from powercontext.prepare.builder import DEFAULT_MAX_BYTES, MAX_MAX_BYTES, MIN_MAX_BYTES

MEMORY_TEXT_MAX_BYTES = 8192
REASON_MAX_CHARS = 512
ALL_SEARCH_MODES = ("auto", "fts", "vector", "hybrid")


def _reason_field() -> StrictCharField:
    return StrictCharField(
        max_length=REASON_MAX_CHARS, required=False, allow_null=True, allow_blank=True, default=None
    )


def _reason(data: dict[str, Any]) -> str | None:
    return normalized(data.get("reason"), "reason", max_chars=REASON_MAX_CHARS, blank_to_none=True)


def _required(
    data: dict[str, Any], name: str, *, max_bytes: int | None = None, max_chars: int | None = None
) -> str:
    value = normalized(data[name], name, max_bytes=max_bytes, max_chars=max_chars)
    assert value is not None
    return value


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


class CaptureInput(StrictSerializer):
    scope_id = scope_field()
    source_id = StrictCharField(min_length=1, max_length=256, pattern=NON_BLANK)
    content = StrictCharField(min_length=1, max_length=200000, pattern=NON_BLANK)
    metadata = StrictObjectField(required=False, allow_null=True, default=None)


@operation("capture_content_source", "v1/sources/content", CaptureInput, status=202, idempotent=True)
def capture_content_source(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Capture a content Source (idempotent by scope and source id)."""
    captured = source_capture(
        scope_id=data["scope_id"],
        source_id=data["source_id"],
        content=data["content"],
        metadata=data.get("metadata"),
        captured_by=owner_key(caller.token),
    )
    return {
        "status": "accepted",
        "source": {"name": captured.source_type, "source_id": captured.source_id},
        "position": captured.position,
    }


class RememberInput(StrictSerializer):
    scope_id = scope_field()
    kind = StrictCharField(min_length=1, max_length=128)
    text = StrictCharField(min_length=1)
    reason = _reason_field()
    expected_revision = StrictIntegerField(min_value=1, required=False, allow_null=True, default=None)


@operation("remember_memory", "v1/memory/remember", RememberInput)
def remember_memory(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Remember one entry as the next Memory revision of the scope."""
    mutation = memory_services.memory_remember(
        scope_id=data["scope_id"],
        kind=_required(data, "kind", max_chars=128),
        text=_required(data, "text", max_bytes=MEMORY_TEXT_MAX_BYTES),
        reason=_reason(data),
        expected_revision=data.get("expected_revision"),
    )
    return render.memory_mutation(mutation.revision, mutation.entry)


class SearchInput(StrictSerializer):
    scope_id = scope_field()
    query = StrictCharField(min_length=1, max_length=8192)
    limit = StrictIntegerField(min_value=1, max_value=50, required=False, default=10)
    mode = StrictChoiceField(choices=ALL_SEARCH_MODES, required=False, default="auto")


@operation("search_memory", "v1/memory/search", SearchInput, read_only=True, idempotent=True)
def search_memory(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Search the active entries of the scope's current Memory head."""
    if data["mode"] not in search.available_modes():
        raise CapabilityNotSupported(details={"capability": f"search_mode:{data['mode']}"})
    if not NON_BLANK.search(data["query"]):
        raise field_error(["query"], "Must contain a non-whitespace character.", "string_blank")
    result = memory_selectors.memory_search(
        scope_id=data["scope_id"], query=data["query"], limit=data["limit"], mode=data["mode"]
    )
    return render.memory_search(result)


class ListEntriesInput(StrictSerializer):
    scope_id = scope_field()
    include_inactive = StrictBooleanField(required=False, default=False)


@operation("list_memory_entries", "v1/memory/entries/list", ListEntriesInput, read_only=True, idempotent=True)
def list_memory_entries(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """List the entries of the scope's current Memory head."""
    revision, entries = memory_selectors.memory_list_entries(
        scope_id=data["scope_id"], include_inactive=data["include_inactive"]
    )
    return {"memory": render.memory_ref(revision), "entries": [render.memory_entry(e) for e in entries]}


class GetEntryInput(StrictSerializer):
    scope_id = scope_field()
    citation = MemoryCitationSerializer()


@operation("get_memory_entry", "v1/memory/entries/get", GetEntryInput, read_only=True, idempotent=True)
def get_memory_entry(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Resolve an exact citation to the immutable entry version it names."""
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


class ReviseEntryInput(StrictSerializer):
    scope_id = scope_field()
    citation = MemoryCitationSerializer()
    kind = StrictCharField(min_length=1, max_length=128)
    text = StrictCharField(min_length=1)
    reason = _reason_field()


@operation("revise_memory_entry", "v1/memory/entries/revise", ReviseEntryInput)
def revise_memory_entry(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Replace an active entry's content with a new version in a new Memory revision."""
    mutation = memory_services.memory_revise(
        scope_id=data["scope_id"],
        citation=_citation(data),
        kind=_required(data, "kind", max_chars=128),
        text=_required(data, "text", max_bytes=MEMORY_TEXT_MAX_BYTES),
        reason=_reason(data),
    )
    return render.memory_mutation(mutation.revision, mutation.entry)


class RetireEntryInput(StrictSerializer):
    scope_id = scope_field()
    citation = MemoryCitationSerializer()
    reason = _reason_field()


# Any token may retire within its scopes, an agent's too (issue 33): a retire is a new Memory
# revision, nothing is deleted, the entry's exact citations keep resolving and a reviewer can
# make it active again; the same token could already revise the entry's text.
@operation("retire_memory_entry", "v1/memory/entries/retire", RetireEntryInput, destructive=True)
def retire_memory_entry(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Deactivate an active entry in a new Memory revision (its history stays readable)."""
    mutation = memory_services.memory_retire(
        scope_id=data["scope_id"], citation=_citation(data), reason=_reason(data)
    )
    return render.memory_mutation(mutation.revision, mutation.entry)


class ChangesInput(StrictSerializer):
    scope_id = scope_field()
    since_revision = StrictIntegerField(min_value=0, required=False, allow_null=True, default=None)


@operation("list_memory_changes", "v1/memory/changes", ChangesInput, read_only=True, idempotent=True)
def list_memory_changes(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """List the per-revision changes of the scope's Memory after a revision.

    The contract: "positive nonexistent revisions are errors". A positive ``since_revision``
    beyond the head is 422 ``revision_unknown`` for every scope, including one that has no
    Memory yet (its head is revision 0); 0 and null are always fine.
    """
    since = data.get("since_revision")
    head = memory_selectors.memory_head_revision(scope_id=data["scope_id"])
    if since is not None and since > (head or 0):
        raise field_error(
            ["since_revision"], "Must not be greater than the current Memory revision.", "revision_unknown"
        )
    if head is None:
        return {"memory": None, "revisions": []}
    if since is None:
        since = head - 1  # no lower bound given: the head revision's own changes
    revision, changes = memory_selectors.memory_list_changes(scope_id=data["scope_id"], since_revision=since)
    return {
        "memory": render.memory_ref(revision),
        "revisions": [{"memory_ref": render.memory_ref(c.revision), "changes": c.changes} for c in changes],
    }


class PrepareInput(StrictSerializer):
    scope_id = scope_field()
    query = StrictCharField(min_length=1, max_length=8192, pattern=NON_BLANK)
    max_bytes = StrictIntegerField(
        min_value=MIN_MAX_BYTES, max_value=MAX_MAX_BYTES, required=False, default=DEFAULT_MAX_BYTES
    )


_application = ScopedContextApplication(audit=True)


@operation("prepare_context", "v1/context/prepare", PrepareInput, read_only=True, idempotent=True)
def prepare_context(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Prepare bounded, cited context for one agent turn (never an MCP tool)."""
    prepared = _application.prepare(
        PrepareRequest(scope_id=data["scope_id"], query=data["query"], max_bytes=data["max_bytes"])
    )
    body = prepared.as_dict()
    metrics.observe_prepare(body)
    return body


OPERATIONS: tuple[Operation, ...] = (
    prepare_context,
    capture_content_source,
    remember_memory,
    search_memory,
    list_memory_entries,
    get_memory_entry,
    revise_memory_entry,
    retire_memory_entry,
    list_memory_changes,
)
