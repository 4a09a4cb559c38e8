"""``validate`` checks flat schemas without building a DRF serializer (issue 35, build 4); what it
returns, and every error, must be what the serializer gives for the same payload."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_api.operations import OPERATIONS
from context_api.operations.memory import PrepareInput
from context_api.validation import _flatten, _plan, validate
from powercontext.core.exceptions import InvalidRequest

FLAT = [op.input for op in OPERATIONS.values() if _plan(op.input)]
NESTED = [op.input for op in OPERATIONS.values() if not _plan(op.input)]

_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.sampled_from([0, 1, 5, 8, 50, 200, 1000, 8000, 64000, 10**18, True, False, 1.0, "", " ", "x"]),
    st.sampled_from(["fts", "hybrid", "vector", "auto", "note", "decision", "overwrite", "scope-a"]),
    st.text(max_size=300),
    st.sampled_from(["a\x00b", "\ud800", " lead", "trail ", "x" * 257, "y" * 8193, "id with space"]),
    st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _through_drf(serializer_class: Any, data: Any) -> tuple[str, Any]:
    """What ``validate`` answered before the fast path: the serializer's data or its errors."""
    serializer = serializer_class(data=data)
    if serializer.is_valid():
        return "ok", dict(serializer.validated_data)
    return "invalid", {"errors": _flatten(serializer.errors, [])}


def _through_validate(serializer_class: Any, data: Any) -> tuple[str, Any]:
    try:
        return "ok", validate(serializer_class, data)
    except InvalidRequest as exc:
        return "invalid", exc.details


@st.composite
def _payloads(draw: st.DrawFn) -> tuple[Any, dict[str, Any]]:
    serializer_class = draw(st.sampled_from(FLAT))
    names = list(serializer_class._declared_fields)
    payload = {name: draw(_values) for name in draw(st.lists(st.sampled_from(names), unique=True))}
    if draw(st.integers(0, 9)) == 0:
        payload[draw(st.sampled_from(["extra", "Scope_id", ""]))] = draw(_values)
    return serializer_class, payload


def test_the_fast_path_covers_the_flat_schemas_prepare_first() -> None:
    assert PrepareInput in FLAT
    assert len(FLAT) >= 10 and NESTED  # nested schemas keep DRF's path


@settings(max_examples=600, deadline=None)
@given(_payloads())
def test_the_fast_path_answers_as_the_serializer_does(case: tuple[Any, dict[str, Any]]) -> None:
    serializer_class, payload = case
    assert _through_validate(serializer_class, payload) == _through_drf(serializer_class, payload)


def test_a_valid_prepare_body_is_returned_with_its_default() -> None:
    data = validate(PrepareInput, {"scope_id": "s", "query": "q"})
    assert data == {"scope_id": "s", "query": "q", "max_bytes": PrepareInput().fields["max_bytes"].default}
