"""Review Inbox forms. Every action form carries the hidden ``expected_version`` that feeds the
service's compare-and-swap; proposal fields are validated by the same rules as the /v1 API."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from django import forms

from powercontext.core import families
from powercontext.core.exceptions import InvalidRequest
from review.selectors.bulk import BULK_MAX
from review.selectors.candidate import VersionView
from review.services import Submission

REASON_MAX = 2000


def _lines(value: str) -> str:
    """Browsers post textareas with CRLF line breaks; the stored text uses LF."""
    return value.replace("\r\n", "\n").replace("\r", "\n")


class TextField(forms.CharField):
    """A stripped text field with normalized line breaks."""

    def to_python(self, value: Any) -> str | None:
        return super().to_python(_lines(value) if isinstance(value, str) else value)


def _version_field() -> forms.IntegerField:
    return forms.IntegerField(min_value=1, widget=forms.HiddenInput)


class ApproveForm(forms.Form):
    expected_version = _version_field()


class RebaseForm(forms.Form):
    expected_version = _version_field()
    revision = forms.IntegerField(min_value=1, widget=forms.HiddenInput)


def _reason_field() -> TextField:
    return TextField(max_length=REASON_MAX, label="Reason", widget=forms.Textarea(attrs={"rows": 2}))


class ReopenForm(forms.Form):
    """Reopen a rejected candidate: the rejected version the reviewer saw, and why."""

    expected_version = _version_field()
    reason = _reason_field()


class RetireForm(forms.Form):
    """Retire the approved artifact at the revision the reviewer saw, and why."""

    expected_revision = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    reason = _reason_field()


class RevertForm(RetireForm):
    """Revert the approved artifact (at the revision the reviewer saw) to an earlier revision."""

    to_revision = forms.IntegerField(min_value=1, label="Revert to revision")
    expected_state = forms.ChoiceField(choices=[("active", "active"), ("retired", "retired")])


class ClaimForm(forms.Form):
    """ "Assign to me": the claimant the reviewer saw (0: nobody), so a claim made meanwhile is
    reported instead of silently taken over; ``back`` says which page to return to."""

    expected_claimant = forms.IntegerField(min_value=0, required=False, widget=forms.HiddenInput)
    back = forms.ChoiceField(choices=[("candidate", "candidate"), ("queue", "queue")], required=False)


class UndoForm(forms.Form):
    """The Undo toast: the candidates whose decisions to take back (one, or a bulk batch)."""

    candidate = forms.Field(widget=forms.MultipleHiddenInput)

    def clean_candidate(self) -> list[int]:
        values = self.data.getlist("candidate") if hasattr(self.data, "getlist") else []
        if (
            not values
            or len(values) > BULK_MAX
            or not all(v.isascii() and v.isdigit() and len(v) <= 18 for v in values)
        ):
            raise forms.ValidationError("The Undo form is malformed.")
        return [int(v) for v in values]


class RejectForm(forms.Form):
    expected_version = _version_field()
    reason = TextField(
        max_length=REASON_MAX,
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "Why is this rejected? (required)"}),
        error_messages={"required": "A reason is required to reject."},
    )


_ITEM = re.compile(r"([0-9]{1,18}):([0-9]{1,9})")


class ItemsField(forms.Field):
    """Selected queue rows, each posted as ``<pk>:<expected_version>``."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> list[tuple[int, int]]:
        values = value if isinstance(value, (list, tuple)) else ([value] if value else [])
        if len(values) > BULK_MAX:
            raise forms.ValidationError(f"Select at most {BULK_MAX} candidates at a time.")
        items: list[tuple[int, int]] = []
        for raw in values:
            match = _ITEM.fullmatch(str(raw))
            if match is None or int(match[2]) < 1:
                raise forms.ValidationError("The selection is malformed; reload the queue.")
            items.append((int(match[1]), int(match[2])))
        return items


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# The last instant a datetime holds (the end of year 9999), in epoch microseconds.
SEEN_MAX = (datetime.max.replace(tzinfo=UTC) - EPOCH) // timedelta(microseconds=1)
SEEN_MALFORMED = "The queue's “seen” time is malformed or out of range; reload the queue and try again."


class SeenField(forms.IntegerField):
    """The instant the queue page was read (epoch microseconds, as the page writes it), cleaned
    to an aware datetime. A number past what a datetime holds is refused, never converted."""

    default_error_messages = {
        "invalid": SEEN_MALFORMED,
        "min_value": SEEN_MALFORMED,
        "max_value": SEEN_MALFORMED,
    }

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(min_value=0, max_value=SEEN_MAX, widget=forms.HiddenInput, **kwargs)

    def clean(self, value: Any) -> datetime | None:
        micros = super().clean(value)
        return None if micros is None else EPOCH + timedelta(microseconds=micros)


class BulkForm(forms.Form):
    """One decision for several queue rows: the selected ``item``s, or all rows matching the
    queue's filters as the reviewer saw them at ``seen`` (posted as epoch microseconds)."""

    decision = forms.ChoiceField(
        choices=[("approve", "Approve"), ("reject", "Reject"), ("request_changes", "Request changes")]
    )
    reason = TextField(max_length=REASON_MAX, required=False)
    item = ItemsField(required=False)
    all_matching = forms.BooleanField(required=False)
    # Bulk approval leaves out items flagged for hidden characters and stale updates unless ticked.
    include_flagged = forms.BooleanField(required=False)
    seen = SeenField(required=False)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("decision") == "reject" and not cleaned.get("reason"):
            self.add_error("reason", "A reason is required to reject.")
        if cleaned.get("decision") == "request_changes" and not cleaned.get("reason"):
            self.add_error("reason", "A comment is required to request changes.")
        if cleaned.get("all_matching"):
            if cleaned.get("seen") is None:
                self.add_error(None, "The selection is malformed; reload the queue.")
        elif not cleaned.get("item") and "item" not in self.errors:
            self.add_error(None, "Select at least one candidate.")
        return cleaned


def add_service_errors(form: forms.Form, exc: InvalidRequest) -> None:
    """Attach a service's ``InvalidRequest`` details to the form (field errors where the location
    names a field of the form, form-wide errors otherwise)."""
    errors = (exc.details or {}).get("errors") or [{"loc": [], "msg": exc.message}]
    for error in errors:
        loc = [part for part in error.get("loc", []) if part not in ("body", "proposal")]
        name = loc[0] if loc and isinstance(loc[0], str) and loc[0] in form.fields else None
        form.add_error(name, str(error.get("msg", exc.message)))


class ReviseForm(forms.Form):
    """A complete replacement proposal; subclasses per family come from the family spec."""

    spec: families.FamilySpec

    expected_version = _version_field()
    reason = TextField(
        max_length=REASON_MAX,
        required=False,
        label="Reason for this proposal",
        widget=forms.Textarea(attrs={"rows": 2}),
    )

    def proposal(self) -> dict[str, Any]:
        return {name: self.cleaned_data[name] for name in self.spec.field_names}

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        for field in self.spec.fields:
            if field.name not in cleaned:
                continue
            value = cleaned[field.name]
            if field.kind == "lines":
                value = cleaned[field.name] = [line.strip() for line in value.split("\n") if line.strip()]
            problem = families.field_problem(field, value)
            if problem is not None:
                self.add_error(field.name, problem)
        return cleaned

    def submission(self, current: VersionView) -> Submission:
        """The complete replacement proposal; the evidence and target stay the current version's
        (a revise never moves the target: Rebase and the conflict editor do, by merging)."""
        return Submission(
            proposal=self.proposal(),
            source_refs=[dict(ref) for ref in current.source_refs],
            artifact_refs=[dict(ref) for ref in current.artifact_refs],
            target=dict(current.target) if current.target is not None else None,
            reason=self.cleaned_data.get("reason") or None,
        )

    @classmethod
    def initial_from(cls, candidate_version: int, current: VersionView) -> dict[str, Any]:
        initial: dict[str, Any] = {"expected_version": candidate_version, "reason": current.reason or ""}
        for field in current.fields:
            if field.name in cls.spec.field_names:
                initial[field.name] = field.text
        return initial


def _form_field(field: families.ProposalField) -> TextField:
    if field.kind == "lines":  # one item per line; limits checked in ReviseForm.clean
        return TextField(
            label=field.label, help_text=field.help_text, widget=forms.Textarea(attrs={"rows": field.rows})
        )
    widget = forms.TextInput() if field.rows <= 1 else forms.Textarea(attrs={"rows": field.rows})
    return TextField(label=field.label, max_length=field.max_length, help_text=field.help_text, widget=widget)


def revise_form(spec: families.FamilySpec) -> type[ReviseForm]:
    """The Inbox revise form of one family, derived from its spec."""
    attrs: dict[str, Any] = {"spec": spec, **{f.name: _form_field(f) for f in spec.fields}}
    attrs["field_order"] = [*spec.field_names, "reason", "expected_version"]
    return type(f"{spec.family.value.title()}ReviseForm", (ReviseForm,), attrs)


REVISE_FORMS: dict[str, type[ReviseForm]] = {
    name: revise_form(spec) for name, spec in families.PROPOSAL_FAMILIES.items()
}


# Per-field comments of a change request: one optional text per proposal field, of any family
# (the service refuses a field the candidate's family does not have).
FIELD_COMMENT_NAMES = tuple(
    dict.fromkeys(name for spec in families.PROPOSAL_FAMILIES.values() for name in spec.field_names)
)


class ChangesForm(forms.Form):
    """Request changes (or comment without a decision): the version the reviewer saw, the
    required comment, and optional comments on single fields (posted as ``field_<name>``)."""

    expected_version = _version_field()
    comment = TextField(
        max_length=REASON_MAX,
        widget=forms.Textarea(attrs={"rows": 3}),
        error_messages={"required": "A comment is required."},
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in FIELD_COMMENT_NAMES:
            self.fields[f"field_{name}"] = TextField(max_length=REASON_MAX, required=False)

    def field_comments(self) -> dict[str, str]:
        return {
            name: text
            for name in FIELD_COMMENT_NAMES
            if (text := self.cleaned_data.get(f"field_{name}") or "")
        }
