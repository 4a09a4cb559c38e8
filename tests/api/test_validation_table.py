"""Every field of every implemented /v1 operation at its boundaries.

Each bad case starts from a body the server accepts (checked by
``test_the_base_body_of_each_operation_is_accepted``) and changes exactly one thing. A bad case
must answer 422 ``invalid_request`` in the error envelope, point at the field it broke, and
leave every table untouched.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tests.api.helpers import assert_error, assert_invalid, memory_ref, ok, row_counts

SCOPE = "validation-scope"
SEED_TEXT = "alpha seed note"

PATHS = {
    "capture": "/v1/sources/content",
    "remember": "/v1/memory/remember",
    "search": "/v1/memory/search",
    "list": "/v1/memory/entries/list",
    "get": "/v1/memory/entries/get",
    "revise": "/v1/memory/entries/revise",
    "retire": "/v1/memory/entries/retire",
    "changes": "/v1/memory/changes",
}
SUCCESS = {"capture": 202}
CITED = ("get", "revise", "retire")

MISSING = object()
EMOJI = "\U0001f680"  # 4 UTF-8 bytes
E_ACUTE_DECOMPOSED = "e\u0301"  # 3 UTF-8 bytes, NFC "é" is 2


def base_body(op: str, citation: dict[str, Any]) -> dict[str, Any]:
    """A body the server accepts for ``op`` in the seeded scope (head revision 1)."""
    bodies: dict[str, dict[str, Any]] = {
        "capture": {"scope_id": SCOPE, "source_id": "src-1", "content": "hello", "metadata": {"k": "v"}},
        "remember": {
            "scope_id": SCOPE,
            "kind": "note",
            "text": "a new note",
            "reason": "why",
            "expected_revision": 1,
        },
        "search": {"scope_id": SCOPE, "query": "alpha", "limit": 10, "mode": "auto"},
        "list": {"scope_id": SCOPE, "include_inactive": False},
        "get": {"scope_id": SCOPE, "citation": citation},
        "revise": {
            "scope_id": SCOPE,
            "citation": citation,
            "kind": "note",
            "text": "revised",
            "reason": "why",
        },
        "retire": {"scope_id": SCOPE, "citation": citation, "reason": "why"},
        "changes": {"scope_id": SCOPE, "since_revision": 0},
    }
    return copy.deepcopy(bodies[op])


def with_change(body: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    target = body
    for key in path[:-1]:
        target = target[key]
    if value is MISSING:
        target.pop(path[-1], None)
    else:
        target[path[-1]] = value
    return body


@pytest.fixture
def seeded(api: Any) -> dict[str, Any]:
    """One Memory entry in SCOPE (head revision 1); returns its citation."""
    return api.remember(SCOPE, SEED_TEXT)["entry"]["citation"]


# --- the bad-input table -----------------------------------------------------------------------

STRING_TYPE_VIOLATIONS = [(5, "int"), (True, "bool"), (["x"], "list"), ({"x": 1}, "object"), (1.5, "float")]
INTEGER_TYPE_VIOLATIONS = [
    ("1", "string"),
    (1.0, "float_1.0"),
    (5.0, "float_5.0"),
    (True, "true"),
    (False, "false"),
    ([1], "list"),
    ({}, "object"),
]
ID128_VIOLATIONS = [
    ("", "empty"),
    (" ", "space"),
    ("a b", "inner_space"),
    ("mem\u00e9", "non_ascii"),
    ("a\n", "trailing_newline"),
    ("a\t", "tab"),
    ("a\x7f", "delete_char"),
    ("x" * 129, "129_chars"),
    (None, "null"),
    (MISSING, "missing"),
    (5, "int"),
]


def _cases() -> list[Any]:
    cases: list[Any] = []

    def add(op: str, path: tuple[str, ...], value: Any, label: str) -> None:
        cases.append(pytest.param(op, path, value, id=f"{op}-{'.'.join(path)}-{label}"))

    for op in PATHS:
        for value, label in [
            (MISSING, "missing"),
            (None, "null"),
            ("", "empty"),
            (" ", "space"),
            ("\t\n \r", "whitespace"),
            ("\u3000", "ideographic_space"),
            ("s" * 257, "257_chars"),
            ("s\x00", "nul"),
            ("s\ud800", "unpaired_high_surrogate"),
            ("\udc00s", "unpaired_low_surrogate"),
            *STRING_TYPE_VIOLATIONS,
        ]:
            add(op, ("scope_id",), value, label)
        add(op, ("unexpected",), 1, "unknown_field")
        add(op, ("Scope_id",), SCOPE, "unknown_field_case")

    # capture_content_source
    for value, label in [
        (MISSING, "missing"),
        (None, "null"),
        ("", "empty"),
        ("   ", "whitespace"),
        ("i" * 257, "257_chars"),
        ("id\x00", "nul"),
        *STRING_TYPE_VIOLATIONS,
    ]:
        add("capture", ("source_id",), value, label)
    for value, label in [
        (MISSING, "missing"),
        (None, "null"),
        ("", "empty"),
        (" \n\t ", "whitespace"),
        ("c" * 200_001, "200001_chars"),
        (EMOJI * 200_001, "200001_emoji"),
        ("a\x00b", "nul"),
        ("\ud83d", "unpaired_surrogate"),
        *STRING_TYPE_VIOLATIONS,
    ]:
        add("capture", ("content",), value, label)
    for value, label in [
        ([], "list"),
        ("x", "string"),
        (5, "int"),
        (True, "bool"),
        ({"k": "a\x00"}, "nul_in_value"),
        ({"k\x00": "v"}, "nul_in_key"),
        ({"k": ["\ud800"]}, "surrogate_in_nested_value"),
    ]:
        add("capture", ("metadata",), value, label)

    # kind / text / reason of remember and revise; reason of retire
    for op in ("remember", "revise"):
        for value, label in [
            (MISSING, "missing"),
            (None, "null"),
            ("", "empty"),
            ("   ", "whitespace"),
            ("\u00a0\u2003", "unicode_whitespace"),
            ("k" * 129, "129_chars"),
            ("k\x00", "nul"),
            *STRING_TYPE_VIOLATIONS,
        ]:
            add(op, ("kind",), value, label)
        for value, label in [
            (MISSING, "missing"),
            (None, "null"),
            ("", "empty"),
            ("   ", "spaces"),
            ("\n\t\r ", "whitespace"),
            ("\u3000\u00a0", "unicode_whitespace"),
            ("t" * 8193, "8193_ascii_bytes"),
            (EMOJI * 2048 + "t", "8193_bytes_emoji"),
            (EMOJI * 2049, "8196_bytes_emoji"),
            (E_ACUTE_DECOMPOSED * 4097, "8194_bytes_after_nfc"),
            ("t\x00", "nul"),
            ("t\udfff", "unpaired_surrogate"),
            *STRING_TYPE_VIOLATIONS,
        ]:
            add(op, ("text",), value, label)
    for op in ("remember", "revise", "retire"):
        for value, label in [("r" * 513, "513_chars"), ("r\x00", "nul"), *STRING_TYPE_VIOLATIONS]:
            add(op, ("reason",), value, label)

    for value, label in [(0, "zero"), (-1, "negative"), *INTEGER_TYPE_VIOLATIONS]:
        add("remember", ("expected_revision",), value, label)

    # search_memory
    for value, label in [
        (MISSING, "missing"),
        (None, "null"),
        ("", "empty"),
        ("   ", "whitespace"),
        ("q" * 8193, "8193_chars"),
        ("q\x00", "nul"),
        ("q\ud800", "unpaired_surrogate"),
        *STRING_TYPE_VIOLATIONS,
    ]:
        add("search", ("query",), value, label)
    for value, label in [
        (0, "zero"),
        (51, "51"),
        (-1, "negative"),
        (None, "null"),
        ("5", "string_5"),
        *INTEGER_TYPE_VIOLATIONS,
    ]:
        add("search", ("limit",), value, label)
    for value, label in [
        ("x", "unknown"),
        ("FTS", "upper_case"),
        (" fts", "padded"),
        ("", "empty"),
        (None, "null"),
        (1, "int"),
        (["fts"], "list"),
    ]:
        add("search", ("mode",), value, label)

    # list_memory_entries
    for value, label in [
        ("true", "string_true"),
        ("false", "string_false"),
        (1, "one"),
        (0, "zero"),
        (None, "null"),
        ([], "list"),
    ]:
        add("list", ("include_inactive",), value, label)

    # list_memory_changes (the seeded head is revision 1)
    for value, label in [
        (-1, "negative"),
        (2, "beyond_head"),
        (10**20, "far_beyond_head"),
        *INTEGER_TYPE_VIOLATIONS,
    ]:
        add("changes", ("since_revision",), value, label)

    # citations of get / revise / retire
    for op in CITED:
        for value, label in [
            (MISSING, "missing"),
            (None, "null"),
            ("c", "string"),
            ([], "list"),
            ({}, "empty_object"),
        ]:
            add(op, ("citation",), value, label)
        add(op, ("citation", "unexpected"), "x", "unknown_field")
        add(op, ("citation", "memory_ref", "unexpected"), "x", "unknown_field")
        for field in ("entry_id", "entry_version_id"):
            for value, label in ID128_VIOLATIONS:
                add(op, ("citation", field), value, label)
        for value, label in [(MISSING, "missing"), (None, "null"), ([], "list"), ("memory", "string")]:
            add(op, ("citation", "memory_ref"), value, label)
        for field in ("family", "artifact_id"):
            for value, label in ID128_VIOLATIONS:
                add(op, ("citation", "memory_ref", field), value, label)
        for value, label in [
            (0, "zero"),
            (-1, "negative"),
            (None, "null"),
            (MISSING, "missing"),
            *INTEGER_TYPE_VIOLATIONS,
        ]:
            add(op, ("citation", "memory_ref", "revision"), value, label)
    return cases


def _field_error_locs(errors: list[dict[str, Any]]) -> list[list[Any]]:
    return [e["loc"] for e in errors]


@pytest.mark.parametrize("op", list(PATHS))
def test_the_base_body_of_each_operation_is_accepted(api: Any, seeded: dict[str, Any], op: str) -> None:
    response = api.post(PATHS[op], base_body(op, seeded))
    ok(response, SUCCESS.get(op, 200))


@pytest.mark.parametrize(("op", "path", "value"), _cases())
def test_it_rejects_a_bad_field_and_writes_nothing(
    api: Any, seeded: dict[str, Any], op: str, path: tuple[str, ...], value: Any
) -> None:
    body = with_change(base_body(op, seeded), path, value)
    before = row_counts()

    response = api.post(PATHS[op], body)

    errors = assert_invalid(response)
    # The error names the field that broke (or, for a broken container, the container).
    locs = _field_error_locs(errors)
    assert any(loc[1 : len(path) + 1] == list(path) or loc == ["body", *path[:-1]] for loc in locs), locs
    assert row_counts() == before


# --- whole-body violations ---------------------------------------------------------------------


def _raw_cases() -> list[Any]:
    cases: list[Any] = []

    def add(op: str, label: str, make: Any) -> None:
        cases.append(pytest.param(op, make, id=f"{op}-{label}"))

    for op in PATHS:
        add(op, "empty_body", lambda body: b"")
        add(op, "truncated", lambda body: json.dumps(body)[:-1])
        add(op, "trailing_garbage", lambda body: json.dumps(body) + "x")
        add(op, "two_objects", lambda body: json.dumps(body) + json.dumps(body))
        add(op, "array", lambda body: json.dumps([body]))
        add(op, "string", lambda body: json.dumps("x"))
        add(op, "number", lambda body: "1")
        add(op, "null", lambda body: "null")
        add(op, "true", lambda body: "true")
        add(op, "single_quotes", lambda body: json.dumps(body).replace('"', "'"))
        add(op, "duplicate_key", lambda body: '{"scope_id": "other", ' + json.dumps(body)[1:])
        add(op, "nan_value", lambda body: json.dumps({**body, "scope_id": float("nan")}))
        add(op, "infinity_value", lambda body: json.dumps({**body, "scope_id": float("inf")}))
        add(op, "minus_infinity_value", lambda body: json.dumps({**body, "scope_id": float("-inf")}))
        add(
            op,
            "invalid_utf8",
            lambda body: (
                json.dumps({**body, "scope_id": "PLACEHOLDER"}).encode().replace(b"PLACEHOLDER", b"\xff\xfe")
            ),
        )
        add(
            op,
            "latin1_bytes",
            lambda body: (
                json.dumps({**body, "scope_id": "PLACEHOLDER"}).encode().replace(b"PLACEHOLDER", b"caf\xe9")
            ),
        )
        add(op, "utf8_bom", lambda body: b"\xef\xbb\xbf" + json.dumps(body).encode())
        add(op, "utf16_body", lambda body: json.dumps(body).encode("utf-16"))
        add(op, "surrogate_in_key", lambda body: json.dumps({**body, "\ud800": 1}))
        # A wrong-typed value nested a few hundred levels deep: still just a wrong type.
        add(
            op,
            "nested_900_levels",
            lambda body: json.dumps({**body, "scope_id": "PLACEHOLDER"}).replace(
                '"PLACEHOLDER"', "[" * 900 + "]" * 900
            ),
        )
        # Far deeper than any parser recursion limit: malformed input, never a server failure.
        add(
            op,
            "nested_100000_levels",
            lambda body: json.dumps({**body, "scope_id": "PLACEHOLDER"}).replace(
                '"PLACEHOLDER"', "[" * 100_000 + "]" * 100_000
            ),
        )

    def integer_overflow(field_path: tuple[str, ...]) -> Any:
        def make(body: dict[str, Any]) -> str:
            return json.dumps(with_change(body, field_path, "PLACEHOLDER")).replace('"PLACEHOLDER"', "1e400")

        return make

    add(
        "remember",
        "expected_revision_nan",
        lambda body: json.dumps({**body, "expected_revision": float("nan")}),
    )
    add("remember", "expected_revision_1e400", integer_overflow(("expected_revision",)))
    add(
        "remember",
        "expected_revision_exponent",
        lambda body: json.dumps({**body, "expected_revision": "X"}).replace('"X"', "1e0"),
    )
    add("search", "limit_infinity", lambda body: json.dumps({**body, "limit": float("inf")}))
    add("search", "limit_1e400", integer_overflow(("limit",)))
    add("changes", "since_revision_nan", lambda body: json.dumps({**body, "since_revision": float("nan")}))
    for op in CITED:
        add(op, "revision_1e400", integer_overflow(("citation", "memory_ref", "revision")))
        add(
            op,
            "citation_duplicate_key",
            lambda body: json.dumps(body).replace('"entry_id": ', '"entry_id": "x", "entry_id": ', 1),
        )
        add(
            op,
            "memory_ref_duplicate_key",
            lambda body: json.dumps(body).replace('"revision": ', '"revision": 1, "revision": ', 1),
        )
    add("capture", "metadata_nan", lambda body: json.dumps({**body, "metadata": {"x": float("nan")}}))
    add(
        "capture",
        "metadata_duplicate_key",
        lambda body: json.dumps({**body, "metadata": {"a": 1}}).replace('{"a": 1}', '{"a": 1, "a": 2}'),
    )
    # 1e400 is valid JSON grammar but overflows every float: it is an Infinity in disguise.
    add("capture", "metadata_1e400", integer_overflow(("metadata", "x")))
    add(
        "capture",
        "metadata_minus_1e400",
        lambda body: integer_overflow(("metadata", "x"))(body).replace("1e400", "-1e400"),
    )
    add("capture", "content_over_upload_limit", lambda body: json.dumps({**body, "content": "c" * 3_000_000}))
    return cases


@pytest.mark.parametrize(("op", "make"), _raw_cases())
def test_it_rejects_a_malformed_body_and_writes_nothing(
    api: Any, seeded: dict[str, Any], op: str, make: Any
) -> None:
    raw = make(base_body(op, seeded))
    before = row_counts()

    response = api.post(PATHS[op], raw=raw)

    assert_invalid(response)
    assert row_counts() == before


def test_deeply_nested_metadata_is_stored_or_rejected_but_never_a_server_error(api: Any) -> None:
    nested: Any = "leaf"
    for _ in range(900):
        nested = [nested]
    before = row_counts()

    response = api.post(
        PATHS["capture"],
        {"scope_id": SCOPE, "source_id": "deep", "content": "c", "metadata": {"deep": nested}},
    )

    assert response.status_code in (202, 422), (response.status_code, response.content)
    if response.status_code == 422:
        assert_invalid(response)
        assert row_counts() == before


def test_every_error_is_reported_at_once(api: Any, seeded: dict[str, Any]) -> None:
    response = api.post(PATHS["search"], {"scope_id": "", "query": 5, "limit": 0, "mode": "x", "extra": 1})

    locs = _field_error_locs(assert_invalid(response))
    for field in ("scope_id", "query", "limit", "mode", "extra"):
        assert ["body", field] in locs, locs


def test_error_messages_never_echo_the_rejected_value(api: Any, seeded: dict[str, Any]) -> None:
    secret = "secret-scope-" + "z" * 300
    response = api.post(
        PATHS["remember"], {"scope_id": secret, "kind": "k" * 200, "text": "t", "surprise-field": 1}
    )

    assert_invalid(response)
    assert b"secret-scope" not in response.content
    assert b"kkkkk" not in response.content


# --- good boundary values succeed ---------------------------------------------------------------


def _good_cases() -> list[Any]:
    cases: list[Any] = []

    def add(op: str, path: tuple[str, ...], value: Any, label: str) -> None:
        cases.append(pytest.param(op, path, value, id=f"{op}-{'.'.join(path)}-{label}"))

    for op in PATHS:
        add(op, ("scope_id",), "s" * 256, "256_chars")
        add(op, ("scope_id",), EMOJI * 256, "256_emoji")
        add(op, ("scope_id",), " padded scope ", "padded")
        add(op, ("scope_id",), "x", "1_char")
        add(op, ("scope_id",), EMOJI + "\u00e9\u4e2d", "non_ascii")
    add("capture", ("source_id",), "i" * 256, "256_chars")
    add("capture", ("source_id",), "an id with spaces / and unicode \u00e9", "free_text")
    add("capture", ("content",), "c" * 200_000, "200000_chars")
    add("capture", ("content",), EMOJI * 200_000, "200000_emoji")
    add("capture", ("content",), "  padded\n", "padded")
    add("capture", ("metadata",), None, "null")
    add("capture", ("metadata",), MISSING, "missing")
    add("capture", ("metadata",), {}, "empty")
    add("capture", ("metadata",), {"a": [1, 2.5, None, True, {"b": "\u4e2d"}], "n": 10**30}, "nested")
    for op in ("remember", "revise"):
        add(op, ("kind",), "k" * 128, "128_chars")
        add(op, ("kind",), EMOJI * 128, "128_emoji")
        add(op, ("text",), "t" * 8192, "8192_ascii_bytes")
        add(op, ("text",), EMOJI * 2048, "8192_bytes_emoji")
        add(op, ("text",), E_ACUTE_DECOMPOSED * 4096, "8192_bytes_after_nfc")
        add(op, ("text",), "  " + "t" * 8192 + "\n\t", "8192_bytes_after_strip")
        add(op, ("text",), "".join(chr(0x4E00 + i) for i in range(2730)) + "ab", "8192_bytes_distinct_cjk")
        add(op, ("text",), "a " * 4095 + "ab", "4096_words")
        add(op, ("text",), "\ud83d\ude80 paired surrogates", "escaped_surrogate_pair")
        add(op, ("text",), "x", "1_char")
    for op in ("remember", "revise", "retire"):
        add(op, ("reason",), "r" * 512, "512_chars")
        add(op, ("reason",), "", "empty")
        add(op, ("reason",), "   ", "whitespace")
        add(op, ("reason",), None, "null")
        add(op, ("reason",), MISSING, "missing")
    add("remember", ("expected_revision",), None, "null")
    add("remember", ("expected_revision",), MISSING, "missing")
    add("search", ("query",), "q" * 8192, "8192_chars")
    add("search", ("query",), "\u4e2d" * 8192, "8192_cjk_chars")
    add("search", ("query",), "!!!", "no_terms")
    for value in (1, 50):
        add("search", ("limit",), value, str(value))
    add("search", ("limit",), MISSING, "missing")
    for value in ("auto", "fts"):
        add("search", ("mode",), value, value)
    add("search", ("mode",), MISSING, "missing")
    for value in (True, False):
        add("list", ("include_inactive",), value, str(value).lower())
    add("list", ("include_inactive",), MISSING, "missing")
    for value in (None, 0, 1):
        add("changes", ("since_revision",), value, str(value))
    add("changes", ("since_revision",), MISSING, "missing")
    return cases


@pytest.mark.parametrize(("op", "path", "value"), _good_cases())
def test_it_accepts_a_boundary_value(
    api: Any, seeded: dict[str, Any], op: str, path: tuple[str, ...], value: Any
) -> None:
    citation = seeded
    if path == ("scope_id",):
        # The other scope gets its own seed entry, so cited operations have something to cite.
        citation = api.remember(value, SEED_TEXT)["entry"]["citation"]

    response = api.post(PATHS[op], with_change(base_body(op, citation), path, value))

    ok(response, SUCCESS.get(op, 200))


@pytest.mark.parametrize("op", CITED)
@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"entry_id": "e" * 128}, id="entry_id_128_chars"),
        pytest.param({"entry_version_id": "v" * 128}, id="entry_version_id_128_chars"),
        pytest.param({"entry_id": "!#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"}, id="entry_id_all_punctuation"),
        pytest.param(
            {"memory_ref": {"family": "f" * 128, "artifact_id": "memory", "revision": 1}},
            id="family_128_chars",
        ),
        pytest.param(
            {"memory_ref": {"family": "memory", "artifact_id": "a" * 128, "revision": 1}},
            id="artifact_id_128_chars",
        ),
    ],
)
def test_a_well_formed_but_unknown_citation_is_not_found_rather_than_invalid(
    api: Any, seeded: dict[str, Any], op: str, change: dict[str, Any]
) -> None:
    body = base_body(op, {**seeded, **change})
    before = row_counts()

    response = api.post(PATHS[op], body)

    assert_error(response, 404, "memory_not_found")
    assert row_counts() == before


def test_the_stored_text_is_the_normalized_value_that_was_measured(api: Any) -> None:
    result = api.remember(SCOPE, "  " + E_ACUTE_DECOMPOSED * 4096 + "\n")

    assert result["entry"]["text"] == "\u00e9" * 4096
    assert len(result["entry"]["text"].encode("utf-8")) == 8192
    assert result["memory"] == memory_ref(1)
