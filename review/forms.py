"""Review Inbox forms. Every action form carries the hidden ``expected_version`` that feeds the
service's compare-and-swap; proposal fields are validated by the same rules as the /v1 API."""

from __future__ import annotations

from typing import Any

from django import forms

from context_api.review_apis import PROPOSAL_SERIALIZERS
from context_api.validation import validate
from powercontext.exceptions import InvalidRequest
from review.inbox import VersionView
from review.models import Candidate
from review.services import Submission

REASON_MAX = 2000


def _lines(value: str) -> str:
    """Browsers post textareas with CRLF line breaks; the stored text uses LF."""
    return value.replace("\r\n", "\n").replace("\r", "\n")


class TextField(forms.CharField):
    """A stripped text field with normalized line breaks."""

    def to_python(self, value: Any) -> str:
        return super().to_python(_lines(value) if isinstance(value, str) else value)


def _version_field() -> forms.IntegerField:
    return forms.IntegerField(min_value=1, widget=forms.HiddenInput)


class ApproveForm(forms.Form):
    expected_version = _version_field()


class RejectForm(forms.Form):
    expected_version = _version_field()
    reason = TextField(
        max_length=REASON_MAX,
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "Why is this rejected? (required)"}),
        error_messages={"required": "A reason is required to reject."},
    )


def add_service_errors(form: forms.Form, exc: InvalidRequest) -> None:
    """Attach a service's ``InvalidRequest`` details to the form (field errors where the location
    names a field of the form, form-wide errors otherwise)."""
    errors = (exc.details or {}).get("errors") or [{"loc": [], "msg": exc.message}]
    for error in errors:
        loc = [part for part in error.get("loc", []) if part not in ("body", "proposal")]
        name = loc[0] if loc and isinstance(loc[0], str) and loc[0] in form.fields else None
        form.add_error(name, str(error.get("msg", exc.message)))


class _ReviseForm(forms.Form):
    family = ""
    proposal_fields: tuple[str, ...] = ()

    expected_version = _version_field()
    reason = TextField(
        max_length=REASON_MAX,
        required=False,
        label="Reason for this proposal",
        widget=forms.Textarea(attrs={"rows": 2}),
    )

    def proposal(self) -> dict[str, Any]:
        return {name: self.cleaned_data[name] for name in self.proposal_fields}

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if any(name in self.errors for name in self.proposal_fields):
            return cleaned
        try:
            validate(PROPOSAL_SERIALIZERS[self.family], self.proposal())
        except InvalidRequest as exc:
            add_service_errors(self, exc)
        return cleaned

    def submission(self, current: VersionView) -> Submission:
        """The complete replacement proposal; the evidence and target stay the current version's."""
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
            if field.name in cls.proposal_fields:
                initial[field.name] = field.text
        return initial


def _area(rows: int, max_length: int, help_text: str = "") -> TextField:
    return TextField(max_length=max_length, help_text=help_text, widget=forms.Textarea(attrs={"rows": rows}))


class ExperienceReviseForm(_ReviseForm):
    family = Candidate.Family.EXPERIENCE
    proposal_fields = ("situation", "action", "outcome", "lesson")

    situation = _area(4, 8000)
    action = _area(4, 8000)
    outcome = _area(4, 8000)
    lesson = _area(3, 8000)

    field_order = ["situation", "action", "outcome", "lesson", "reason", "expected_version"]


class SkillReviseForm(_ReviseForm):
    family = Candidate.Family.SKILL
    proposal_fields = ("name", "description", "instructions", "validation")

    name = TextField(max_length=128)
    description = TextField(max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))
    instructions = _area(10, 32000)
    validation = TextField(
        help_text="One check per line (1 to 32 lines).", widget=forms.Textarea(attrs={"rows": 4})
    )

    field_order = ["name", "description", "instructions", "validation", "reason", "expected_version"]

    def clean_validation(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data["validation"].split("\n") if line.strip()]


REVISE_FORMS: dict[str, type[_ReviseForm]] = {
    Candidate.Family.EXPERIENCE: ExperienceReviseForm,
    Candidate.Family.SKILL: SkillReviseForm,
}
