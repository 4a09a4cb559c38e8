"""Django admin of the background pipeline: jobs, outputs, set-aside sources, selection and
counters, view-only."""

from __future__ import annotations

from django.contrib import admin
from django.utils.safestring import SafeString

from powercontext.core.admin import ReadOnlyAdmin, pretty_json
from powercontext.pipeline.models import (
    PipelineCounter,
    PipelineJob,
    PipelineOutput,
    PipelineScopeJob,
    PipelineSelection,
    PipelineSetAside,
)


@admin.register(PipelineJob)
class PipelineJobAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "scope_id",
        "session_id",
        "status",
        "outcome",
        "error_code",
        "input_watermark",
        "last_success_watermark",
        "retries_left",
        "lease_until",
        "backoff_until",
        "updated_at",
    )
    list_filter = ("status",)
    search_fields = ("scope_id__exact", "session_id__exact")
    search_help_text = "Exact scope id or session id."
    fields = (
        "scope_id",
        "session_id",
        "status",
        "outcome",
        "error_code",
        "worker_id",
        "lease_until",
        "input_watermark",
        "last_success_watermark",
        "retry_budget",
        "retries_left",
        "backoff_until",
        "isolating",
        "isolate_good",
        "isolate_bad",
        "isolate_reason",
        "probe_upto",
        "usage",
        "started_at",
        "finished_at",
        "created_at",
        "updated_at",
    )


@admin.register(PipelineOutput)
class PipelineOutputAdmin(ReadOnlyAdmin):
    list_display = ("id", "scope_id", "session_id", "watermark", "generator", "updated_at")
    search_fields = ("scope_id__exact", "session_id__exact")
    search_help_text = "Exact scope id or session id."
    fields = ("scope_id", "session_id", "watermark", "generator", "created_at", "updated_at", "items_pretty")

    @admin.display(description="items (redacted)")
    def items_pretty(self, obj: PipelineOutput) -> SafeString:
        return pretty_json({"memories": obj.memories, "experiences": obj.experiences})


@admin.register(PipelineSetAside)
class PipelineSetAsideAdmin(ReadOnlyAdmin):
    """Sources Phase 1 isolated as unprocessable and no longer retries (ids and codes only)."""

    list_display = ("id", "scope_id", "session_id", "source_id", "position", "reason", "created_at")
    list_filter = ("reason",)
    search_fields = ("scope_id__exact", "session_id__exact", "source_id__exact")
    search_help_text = "Exact scope id, session id or source id."
    fields = ("scope_id", "session_id", "source_id", "position", "reason", "created_at")


@admin.register(PipelineScopeJob)
class PipelineScopeJobAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "scope_id",
        "status",
        "pending",
        "error_code",
        "retry_count",
        "lease_until",
        "cooldown_until",
        "last_success_at",
    )
    list_filter = ("status",)
    fields = (
        "scope_id",
        "status",
        "pending",
        "worker_id",
        "lease_until",
        "heartbeat_at",
        "cooldown_until",
        "retry_count",
        "error_code",
        "selection_digest",
        "last_success_at",
        "created_at",
        "updated_at",
    )


@admin.register(PipelineSelection)
class PipelineSelectionAdmin(ReadOnlyAdmin):
    list_display = ("id", "scope_id", "kind", "item_key", "entry_id", "candidate_id", "created_at")
    list_filter = ("kind",)
    search_fields = ("scope_id__exact", "entry_id__exact", "candidate_id__exact")
    search_help_text = "Exact scope id, entry id or candidate id."
    fields = ("scope_id", "kind", "item_key", "session_ids", "entry_id", "candidate_id", "created_at")


@admin.register(PipelineCounter)
class PipelineCounterAdmin(ReadOnlyAdmin):
    list_display = ("scope_id", "name", "value", "updated_at")
    list_filter = ("name",)
    fields = ("scope_id", "name", "value", "updated_at")
