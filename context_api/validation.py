"""Strict request parsing and validation for the /v1 API.

The contract is JSON Schema with closed objects: no coercion (``"5"`` is not 5, ``5`` is not
``"5"``, ``true`` is not 1), unknown fields are errors, and every failure is a ``422
invalid_request`` with ``details.errors`` listing ``{loc, msg, type}``. Messages never echo the
rejected value.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable
from typing import Any, cast

from django.core import validators as django_validators
from django.core.exceptions import RequestDataTooBig
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from powercontext.core import families
from powercontext.core.exceptions import InvalidRequest
from powercontext.core.families import FamilySpec, ProposalField

NON_BLANK = families.NON_BLANK
ID128 = re.compile(r"[\x21-\x7E]+")
TRIMMED = families.ONE_TRIMMED_LINE
_SURROGATE = re.compile("[\ud800-\udfff]")


MAX_DEPTH = 64


def _reject_constant(name: str) -> Any:
    raise ValueError("non-finite number")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):  # 1e400 overflows: no database stores it
        raise ValueError("non-finite number")
    return value


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError("duplicate key")
        result[key] = value
    return result


def _check_string(value: str, loc: list[str | int]) -> None:
    if "\x00" in value:
        raise _single_error(loc, "Strings must not contain NUL (U+0000).", "string_nul")
    if _SURROGATE.search(value):
        raise _single_error(loc, "Strings must be valid Unicode (no unpaired surrogates).", "string_unicode")


def check_strings(root: Any) -> None:
    """Reject NUL, unpaired surrogates and deep nesting anywhere (iteratively, no recursion):
    no backend can store the first two faithfully, and the last would exhaust the stack."""
    stack: list[tuple[Any, list[str | int]]] = [(root, [])]
    while stack:
        value, loc = stack.pop()
        if len(loc) > MAX_DEPTH:
            raise _single_error(
                loc[:MAX_DEPTH], f"JSON nesting must not exceed {MAX_DEPTH} levels.", "nesting_too_deep"
            )
        if isinstance(value, str):
            _check_string(value, loc)
        elif isinstance(value, dict):
            for key, item in value.items():
                _check_string(key, loc)
                stack.append((item, [*loc, key]))
        elif isinstance(value, list):
            stack.extend((item, [*loc, index]) for index, item in enumerate(value))


def _single_error(loc: list[str | int], msg: str, kind: str) -> InvalidRequest:
    return InvalidRequest(details={"errors": [{"loc": ["body", *loc], "msg": msg, "type": kind}]})


def strict_json(raw: bytes) -> Any:
    """Decode UTF-8 JSON strictly: no NaN or Infinity (nor a float that overflows to one), no
    duplicate keys. Raises ``ValueError`` (or ``UnicodeDecodeError``, ``RecursionError``)."""
    return json.loads(
        raw.decode("utf-8"),
        parse_constant=_reject_constant,
        parse_float=_finite_float,
        object_pairs_hook=_no_duplicates,
    )


def parse_json_object(raw: bytes) -> dict[str, Any]:
    """Decode a request body as one strict JSON object (UTF-8, no NaN, no duplicate keys)."""
    try:
        data = strict_json(raw)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _single_error([], "The body must be one valid JSON object.", "json_invalid") from None
    if not isinstance(data, dict):
        raise _single_error([], "The body must be a JSON object.", "object_type")
    check_strings(data)
    return data


def read_body(request: Any) -> bytes:
    try:
        return bytes(request.body)
    except RequestDataTooBig:
        raise _single_error([], "The request body is too large.", "body_too_large") from None


# --- strict fields ---------------------------------------------------------------------------


class StrictCharField(serializers.CharField):
    """A JSON string; lengths count characters; optional pattern (search or fullmatch)."""

    default_error_messages = {
        "invalid": "Must be a string.",
        "blank": "Must not be empty.",
        "pattern": "Does not match the required pattern.",
    }

    def __init__(self, *, pattern: re.Pattern[str] | None = None, full: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        kwargs.setdefault("allow_blank", False)
        self.pattern = pattern
        self.full = full
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        if self.pattern is not None and data != "":
            matched = self.pattern.fullmatch(data) if self.full else self.pattern.search(data)
            if matched is None:
                self.fail("pattern")
        return data


class StrictIntegerField(serializers.IntegerField):
    default_error_messages = {"invalid": "Must be an integer."}

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    default_error_messages = {"invalid": "Must be a boolean."}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictChoiceField(serializers.ChoiceField):
    default_error_messages = {"invalid_choice": "Is not one of the allowed values."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str) or data not in self.choices:
            self.fail("invalid_choice")
        return data


class StrictObjectField(serializers.Field):  # type: ignore[type-arg]
    """A free-form JSON object (or null when allowed)."""

    default_error_messages = {"invalid": "Must be a JSON object."}

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            self.fail("invalid")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class StrictSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """A closed object: the input must be a dict and unknown keys are errors."""

    default_error_messages = {"invalid": "Must be a JSON object."}

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["Must be a JSON object."]})
        unknown = sorted(set(data) - set(self.fields))
        errors: dict[str, Any] = {}
        if unknown:
            for key in unknown:
                errors[key] = ["Unknown field."]
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            detail = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
            errors.update(detail)
        if errors:
            raise serializers.ValidationError(errors)
        return value


def scope_field() -> StrictCharField:
    return StrictCharField(min_length=1, max_length=256, pattern=NON_BLANK)


def id128_field(**kwargs: Any) -> StrictCharField:
    return StrictCharField(min_length=1, max_length=128, pattern=ID128, full=True, **kwargs)


class ArtifactReferenceSerializer(StrictSerializer):
    family = id128_field()
    artifact_id = id128_field()
    revision = StrictIntegerField(min_value=1)


class MemoryCitationSerializer(StrictSerializer):
    memory_ref = ArtifactReferenceSerializer()
    entry_id = id128_field()
    entry_version_id = id128_field()


def _proposal_field(spec: ProposalField) -> serializers.Field[Any, Any, Any, Any]:
    if spec.kind == "lines":
        return serializers.ListField(
            child=StrictCharField(min_length=1, max_length=spec.max_length, pattern=TRIMMED, full=True),
            min_length=spec.min_items,
            max_length=spec.max_items,
        )
    if spec.kind == "line":
        return StrictCharField(min_length=1, max_length=spec.max_length, pattern=TRIMMED, full=True)
    return StrictCharField(min_length=1, max_length=spec.max_length, pattern=NON_BLANK)


def proposal_serializer(spec: FamilySpec) -> type[StrictSerializer]:
    """The closed request schema of one family's ``proposal`` object, from the family spec."""
    name = f"{spec.family.value.title()}ProposalSerializer"
    fields = {field.name: _proposal_field(field) for field in spec.fields}
    return cast(type[StrictSerializer], serializers.SerializerMetaclass(name, (StrictSerializer,), fields))


def _flatten(detail: Any, loc: list[str | int]) -> list[dict[str, Any]]:
    if isinstance(detail, dict):
        out: list[dict[str, Any]] = []
        for key, value in detail.items():
            out.extend(_flatten(value, loc if key == "non_field_errors" else [*loc, key]))
        return out
    if isinstance(detail, list):
        if all(isinstance(item, str) for item in detail):
            return [
                {"loc": ["body", *loc], "msg": str(item), "type": getattr(item, "code", None) or "invalid"}
                for item in detail
            ]
        out = []
        for index, item in enumerate(detail):
            out.extend(_flatten(item, [*loc, index]))
        return out
    return [{"loc": ["body", *loc], "msg": str(detail), "type": getattr(detail, "code", None) or "invalid"}]


def validate(serializer_class: type[serializers.Serializer[Any]], data: Any) -> dict[str, Any]:
    """The serializer's validated data, or ``InvalidRequest`` listing DRF's errors.

    A flat schema (``_plan``) checks a valid payload without building a serializer (DRF deep-copies
    every declared field per instance: ~0.3 ms per request); anything the plan does not accept
    goes through the serializer, so every error is DRF's own."""
    plan = _plans.get(serializer_class)
    if plan is None:
        plan = _plans.setdefault(serializer_class, _plan(serializer_class))
    if plan and isinstance(data, dict):
        accepted = _accepted(plan, data)
        if accepted is not None:
            return accepted
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        raise InvalidRequest(details={"errors": _flatten(serializer.errors, [])})
    return dict(serializer.validated_data)


# --- the flat fast path of ``validate`` -------------------------------------------------------------

# (name, required, default or ``empty``, check): ``check`` tells whether a present value is valid
# exactly as the field's ``run_validation`` would find it (which then returns it unchanged).
_FieldPlan = tuple[str, bool, Any, Callable[[Any], bool]]
_plans: dict[type[Any], tuple[_FieldPlan, ...]] = {}  # per class, built once per process
_BIG_INT = 10**18  # beyond this DRF's str() round trip may differ: its path decides


def _limits(field: Any) -> tuple[int | None, int | None] | None:
    """(lower, upper) bounds of the field's validators, None when it has one we do not mirror."""
    low = high = None
    for validator in field.validators:
        if isinstance(validator, django_validators.MinLengthValidator | django_validators.MinValueValidator):
            low = validator.limit_value
        elif isinstance(
            validator, django_validators.MaxLengthValidator | django_validators.MaxValueValidator
        ):
            high = validator.limit_value
        elif not isinstance(
            validator,
            django_validators.ProhibitNullCharactersValidator | ProhibitSurrogateCharactersValidator,
        ):
            return None
    if callable(low) or callable(high):
        return None
    return low, high


def _check(field: Any) -> Callable[[Any], bool] | None:
    """A field's check for the fast path (null passes where the field allows it: DRF returns it
    as it is), or None when only DRF may decide."""
    check = _value_check(field)
    if check is None or not field.allow_null:
        return check
    return lambda value: value is None or check(value)


def _value_check(field: Any) -> Callable[[Any], bool] | None:
    bounds = _limits(field)
    if bounds is None or field.read_only:
        return None
    low, high = bounds
    kind = type(field)
    if kind is StrictCharField and not field.trim_whitespace:
        pattern, full = field.pattern, field.full

        def text(value: Any) -> bool:
            if not isinstance(value, str) or value == "":  # "": blank, DRF decides
                return False
            if (low is not None and len(value) < low) or (high is not None and len(value) > high):
                return False
            if "\x00" in value or _SURROGATE.search(value):
                return False
            return (
                pattern is None or (pattern.fullmatch(value) if full else pattern.search(value)) is not None
            )

        return text
    if kind is StrictIntegerField:

        def integer(value: Any) -> bool:
            if type(value) is not int or not -_BIG_INT < value < _BIG_INT:
                return False
            return (low is None or value >= low) and (high is None or value <= high)

        return integer
    if kind is StrictBooleanField and bounds == (None, None):
        return lambda value: type(value) is bool
    if kind is StrictChoiceField and bounds == (None, None):
        choices = field.choices
        return lambda value: isinstance(value, str) and value in choices
    return None


def _plan(serializer_class: type[Any]) -> tuple[_FieldPlan, ...]:
    """The fast path of a closed serializer whose fields are all plain strict scalars (empty when
    any is not, or when the serializer validates more than its fields)."""
    if not issubclass(serializer_class, StrictSerializer) or serializer_class.validate is not (
        serializers.Serializer.validate
    ):
        return ()
    serializer = serializer_class()
    if serializer.validators:
        return ()
    plan: list[_FieldPlan] = []
    for name, field in serializer.fields.items():
        check = _check(field)
        if check is None or field.source != name or hasattr(serializer, f"validate_{name}"):
            return ()
        if field.default is not empty and callable(field.default):
            return ()
        plan.append((name, field.required, field.default, check))
    return tuple(plan)


def _accepted(plan: tuple[_FieldPlan, ...], data: dict[str, Any]) -> dict[str, Any] | None:
    """What the serializer would return for ``data`` when every field passes, else None."""
    if len(data) > len(plan):
        return None  # an unknown field
    out: dict[str, Any] = {}
    seen = 0
    for name, required, default, check in plan:
        if name in data:
            value = data[name]
            if not check(value):
                return None
            out[name] = value
            seen += 1
        elif required:
            return None
        elif default is not empty:
            out[name] = default
    return out if seen == len(data) else None


def field_error(loc: list[str | int], msg: str, kind: str = "value_error") -> InvalidRequest:
    return _single_error(loc, msg, kind)


def normalize_text(value: str) -> str:
    return unicodedata.normalize("NFC", value).strip()


def normalized(
    value: str | None,
    loc: str,
    *,
    max_bytes: int | None = None,
    max_chars: int | None = None,
    blank_to_none: bool = False,
) -> str | None:
    """NFC + strip a field; blank is an error (or None when ``blank_to_none``)."""
    if value is None:
        return None
    result = normalize_text(value)
    if not result:
        if blank_to_none:
            return None
        raise field_error([loc], "Must contain a non-whitespace character.", "string_blank")
    if max_bytes is not None and len(result.encode("utf-8")) > max_bytes:
        raise field_error(
            [loc], f"Must not exceed {max_bytes} UTF-8 bytes after normalization.", "string_too_long"
        )
    if max_chars is not None and len(result) > max_chars:
        raise field_error(
            [loc], f"Must not exceed {max_chars} characters after normalization.", "string_too_long"
        )
    return result
