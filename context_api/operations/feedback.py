"""The feedback operation (issue 30; addendum ``powercontext-feedback.openapi.yaml``): agents
and hooks report what they did with the items prepare cited."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from context_api import metrics
from context_api.operations.base import Caller, Operation, operation
from context_api.validation import (
    ArtifactReferenceSerializer,
    MemoryCitationSerializer,
    StrictCharField,
    StrictChoiceField,
    StrictSerializer,
    normalize_text,
    scope_field,
)
from powercontext.feedback import services
from powercontext.feedback.models import NOTE_MAX_CHARS, Outcome

MAX_ITEMS = 32


class ExperienceCitationSerializer(StrictSerializer):
    artifact_ref = ArtifactReferenceSerializer()


class CitationField(serializers.Field):  # type: ignore[type-arg]
    """A citation exactly as prepare rendered it: a Memory citation (``memory_ref``,
    ``entry_id``, ``entry_version_id``) or an Experience citation (``artifact_ref``)."""

    default_error_messages = {
        "invalid": "Must be a citation object as prepare returned it (memory_ref or artifact_ref)."
    }

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict) or ("memory_ref" in data) == ("artifact_ref" in data):
            self.fail("invalid")
        shape = MemoryCitationSerializer if "memory_ref" in data else ExperienceCitationSerializer
        serializer = shape(data=data)
        if not serializer.is_valid():
            raise serializers.ValidationError(serializer.errors)
        return dict(serializer.validated_data)

    def to_representation(self, value: Any) -> Any:
        return value


class FeedbackItemSerializer(StrictSerializer):
    citation = CitationField()
    outcome = StrictChoiceField(choices=[outcome.value for outcome in Outcome])
    note = StrictCharField(
        max_length=NOTE_MAX_CHARS, required=False, allow_null=True, allow_blank=True, default=None
    )


class FeedbackInput(StrictSerializer):
    scope_id = scope_field()
    items = serializers.ListField(
        child=FeedbackItemSerializer(),
        min_length=1,
        max_length=MAX_ITEMS,
        error_messages={
            "not_a_list": "Must be a list.",
            "min_length": "Must hold at least one item.",
            "max_length": f"Must hold at most {MAX_ITEMS} items.",
        },
    )


@operation("report_context_feedback", "v1/context/feedback", FeedbackInput, idempotent=True)
def report_context_feedback(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Report what the agent did with cited items: used, wrong or outdated."""
    results = services.feedback_record(
        scope_id=data["scope_id"],
        items=[
            services.FeedbackItem(
                citation=item["citation"],
                outcome=item["outcome"],
                note=normalize_text(item.get("note") or ""),
            )
            for item in data["items"]
        ],
        token=caller.token,
    )
    metrics.observe_feedback(result.outcome for result in results if result.recorded)
    return {
        "recorded": sum(1 for result in results if result.recorded),
        "items": [
            {"outcome": result.outcome, "recorded": result.recorded, "status": result.status}
            for result in results
        ],
    }


OPERATIONS: tuple[Operation, ...] = (report_context_feedback,)
