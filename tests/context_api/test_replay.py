"""Replay of JSON Lines cases through the pure builder (no database)."""

from __future__ import annotations

import json

import pytest

from powercontext.prepare.builder import BuilderInvariantError, PreparedContextBuilder
from powercontext.prepare.replay import ReplayCaseError, parse_case, replay_lines, run_case

HEAD = {"family": "memory", "artifact_id": "memory", "revision": 18}
RFC_TEXT = "Run the backend contract tests after changing persistence behavior."
QUERY = "Which validation is required after changing persistence?"


def memory_hit(entry_id="mem_ent_12", text=RFC_TEXT, *, version="mem_ver_12_v3", ref=HEAD, **extra):
    return {
        "memory_ref": ref,
        "entry_id": entry_id,
        "entry_version_id": version,
        "text": text,
        "score": 0.5,
        "matched_by": ["fts"],
        **extra,
    }


def experience_hit(artifact_id="exp_1", *, revision=2, family="experience", lesson="L"):
    return {
        "artifact_ref": {"family": family, "artifact_id": artifact_id, "revision": revision},
        "content": {"situation": "S", "action": "A", "outcome": "O", "lesson": lesson},
    }


def case(case_id, *, memory_ref=HEAD, memory_hits=(), experience_hits=(), max_bytes=8000, **extra):
    return {
        "case_id": case_id,
        "request": {
            "scope_id": "git:github.com/oceanbase/powercontext",
            "query": QUERY,
            "max_bytes": max_bytes,
        },
        "memory_ref": memory_ref,
        "memory_hits": list(memory_hits),
        "experience_hits": list(experience_hits),
        **extra,
    }


def replay(*lines: str) -> list[dict]:
    outputs = list(replay_lines(lines))
    assert all(line.endswith("\n") and line.count("\n") == 1 for line in outputs)
    return [json.loads(line) for line in outputs]


def test_it_replays_a_mixed_stream_in_order_without_stopping():
    other_head = {"family": "memory", "artifact_id": "memory", "revision": 17}
    lines = [
        json.dumps(case("ready", memory_hits=[memory_hit()])),
        json.dumps(case("empty-no-memory", memory_ref=None)),
        "",
        json.dumps(case("invariant", memory_hits=[memory_hit(), memory_hit("e2", ref=other_head)])),
        '{"case_id": "broken", "request": ',
        json.dumps([1, 2, 3]),
        json.dumps(
            case("bad-revision", memory_ref={"family": "memory", "artifact_id": "memory", "revision": "18"})
        ),
        "   \n",
        json.dumps(case(7, memory_hits=[memory_hit()], experience_hits=[experience_hit()])) + "\n",
        json.dumps(case("too-small", memory_hits=[memory_hit()], max_bytes=512)),
    ]

    outputs = replay(*lines)

    assert [(o["case_id"], o.get("error"), o.get("response", {}).get("status")) for o in outputs] == [
        ("ready", None, "ready"),
        ("empty-no-memory", None, "empty"),
        ("invariant", "invariant", None),
        (None, "invalid_case", None),
        (None, "invalid_case", None),
        ("bad-revision", "invalid_case", None),
        (7, None, "ready"),
        ("too-small", None, "empty"),
    ]
    assert outputs[2] == {
        "case_id": "invariant",
        "error": "invariant",
        "message": "memory hit cites a revision other than the selected head",
    }
    assert outputs[5]["message"] == "memory_ref.revision must be an integer"


def test_it_reproduces_the_rfc_example_response():
    (output,) = replay(json.dumps(case("rfc", memory_hits=[memory_hit()])))

    assert output["case_id"] == "rfc"
    assert output["response"]["content_bytes"] == 606
    assert output["response"]["status"] == "ready"
    assert list(output["response"]) == ["schema", "status", "content", "content_bytes"]
    assert output["response"]["content"].endswith(
        '"content":"Run the backend contract tests after changing persistence behavior.","truncated":false}]}\n'
        "END_POWERCONTEXT_PREPARED_CONTEXT_V1"
    )


def test_outputs_are_one_json_line_each_with_non_ascii_unescaped():
    text = "多语言 😀\nsecond line\u2028"
    (line,) = replay_lines([json.dumps(case("u", memory_hits=[memory_hit(text=text)]))])

    assert line.endswith("\n") and "\n" not in line[:-1]
    assert "多语言" in line
    assert json.loads(line)["response"]["content"].count(text) == 0  # escaped inside the envelope
    envelope = json.loads(json.loads(line)["response"]["content"].split("\n")[4])
    assert envelope["items"][0]["content"] == text


def test_the_query_and_hit_text_never_appear_in_error_output():
    secret = "TOP-SECRET-TEXT"
    other = {"family": "memory", "artifact_id": secret, "revision": 99}
    lines = [
        json.dumps(case("a", memory_hits=[memory_hit(secret, secret, ref=other)])),
        json.dumps(case("b", memory_hits=[memory_hit(secret, 12345)])),
        '{"case_id": "c", "TOP-SECRET-TEXT": ',
    ]

    for line in replay_lines(lines):
        assert secret not in line and QUERY not in line and "99" not in line


def test_a_hit_without_a_memory_ref_is_an_invariant_failure():
    hit = memory_hit()
    del hit["memory_ref"]

    (a, b) = replay(
        json.dumps(case("missing", memory_hits=[hit])),
        json.dumps(case("null", memory_hits=[memory_hit(ref=None)])),
    )

    assert a["error"] == b["error"] == "invariant"


def test_hits_without_a_head_are_an_invariant_failure():
    (output,) = replay(json.dumps(case("x", memory_ref=None, memory_hits=[memory_hit()])))

    assert output["error"] == "invariant"


def test_more_hits_than_the_windows_are_invariant_failures():
    memories = [memory_hit(f"e{n}", version="v") for n in range(17)]
    experiences = [experience_hit(f"x{n}") for n in range(9)]

    outputs = replay(
        json.dumps(case("m16", memory_hits=memories[:16])),
        json.dumps(case("m17", memory_hits=memories)),
        json.dumps(case("x8", experience_hits=experiences[:8])),
        json.dumps(case("x9", experience_hits=experiences)),
    )

    assert [o.get("error") for o in outputs] == [None, "invariant", None, "invariant"]


def test_missing_or_null_ids_and_text_are_incomplete_hits_that_get_skipped():
    no_id = memory_hit("e1")
    del no_id["entry_id"]
    outputs = replay(
        json.dumps(
            case("a", memory_hits=[no_id, memory_hit("e2", text=None), memory_hit("e3", version=None)])
        ),
        json.dumps(
            case("b", experience_hits=[{"artifact_ref": experience_hit()["artifact_ref"], "content": {}}])
        ),
    )

    assert [o["response"]["status"] for o in outputs] == ["empty", "empty"]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda c: c.pop("request"), "request must be an object"),
        (lambda c: c["request"].update(max_bytes="8000"), "request.max_bytes must be an integer"),
        (lambda c: c["request"].update(max_bytes=8000.0), "request.max_bytes must be an integer"),
        (lambda c: c["request"].update(max_bytes=True), "request.max_bytes must be an integer"),
        (lambda c: c["request"].update(max_bytes=511), "request.max_bytes must be between 512 and 32768"),
        (lambda c: c["request"].update(max_bytes=32769), "request.max_bytes must be between 512 and 32768"),
        (lambda c: c["request"].update(query=5), "request.query must be a string"),
        (lambda c: c.update(memory_hits={}), "memory_hits must be a list"),
        (lambda c: c.update(memory_hits=["x"]), "memory_hits[0] must be an object"),
        (
            lambda c: c["memory_hits"].append(memory_hit(text=5)),
            "memory_hits[1].text must be a string or null",
        ),
        (lambda c: c["memory_hits"].append(memory_hit(score="hi")), "memory_hits[1].score must be a number"),
        (
            lambda c: c["memory_hits"].append(memory_hit(score=10**400)),
            "memory_hits[1].score is out of range",
        ),
        (
            lambda c: c["memory_hits"].append(memory_hit(matched_by="fts")),
            "memory_hits[1].matched_by must be a list of strings",
        ),
        (
            lambda c: c.update(experience_hits=[{"content": {}}]),
            "experience_hits[0].artifact_ref must be an object",
        ),
        (
            lambda c: c.update(experience_hits=[{"artifact_ref": HEAD}]),
            "experience_hits[0].content must be an object",
        ),
        (
            lambda c: c.update(experience_hits=[experience_hit(revision=1.5)]),
            "experience_hits[0].artifact_ref.revision must be an integer",
        ),
        (lambda c: c.update(case_id=[1]), "case_id must be a string, an integer or null"),
    ],
)
def test_malformed_cases_are_reported_as_invalid_case(mutate, message):
    data = case("bad", memory_hits=[memory_hit()])
    mutate(data)

    output = run_case(data)

    assert output == {
        "case_id": None if message.startswith("case_id") else "bad",
        "error": "invalid_case",
        "message": message,
    }


def test_max_bytes_defaults_to_8000():
    data = case("d", memory_hits=[memory_hit()])
    del data["request"]["max_bytes"]

    assert parse_case(data).max_bytes == 8000
    assert run_case(data)["response"]["status"] == "ready"


def test_unknown_keys_are_ignored_so_golden_files_may_carry_expectations():
    data = case("g", memory_hits=[memory_hit(note="ignored")], expected={"status": "ready"})

    assert run_case(data)["response"]["content_bytes"] == 606


def test_experience_hits_replay_with_their_kind():
    (output,) = replay(json.dumps(case("x", memory_ref=None, experience_hits=[experience_hit()])))

    envelope = json.loads(output["response"]["content"].split("\n")[4])
    assert envelope["items"] == [
        {
            "citation": {"artifact_ref": {"family": "experience", "artifact_id": "exp_1", "revision": 2}},
            "content": "Situation: S\nAction: A\nOutcome: O\nLesson: L",
            "truncated": False,
            "kind": "experience",
        }
    ]


def test_an_experience_of_another_family_is_an_invariant_failure():
    (output,) = replay(json.dumps(case("x", experience_hits=[experience_hit(family="memory")])))

    assert output["error"] == "invariant"


def test_an_unexpected_failure_is_reported_and_the_stream_goes_on():
    class BrokenBuilder(PreparedContextBuilder):
        def build(self, **kwargs):
            raise RuntimeError("boom with private text")

    output = run_case(case("x", memory_hits=[memory_hit()]), builder=BrokenBuilder())

    assert output == {"case_id": "x", "error": "internal", "message": "RuntimeError"}


def test_parse_case_rejects_non_objects():
    with pytest.raises(ReplayCaseError):
        parse_case([])
    assert run_case("text") == {
        "case_id": None,
        "error": "invalid_case",
        "message": "case is not a JSON object",
    }


def test_deeply_nested_json_is_an_invalid_case_not_a_crash():
    (output,) = replay("[" * 100_000 + "]" * 100_000)

    assert output["error"] == "invalid_case" and output["case_id"] is None


def test_replay_lines_is_lazy_and_accepts_any_iterable():
    produced = []

    def source():
        for n in range(3):
            produced.append(n)
            yield json.dumps(case(n, memory_ref=None))

    stream = replay_lines(source())
    first = next(stream)

    assert json.loads(first)["case_id"] == 0 and produced == [0]
    assert [json.loads(line)["case_id"] for line in stream] == [1, 2]


def test_builder_invariant_errors_are_not_validation_errors():
    assert issubclass(BuilderInvariantError, Exception) and not issubclass(BuilderInvariantError, ValueError)
