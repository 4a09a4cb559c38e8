"""The openai generator against a scripted OpenAI-compatible server on 127.0.0.1 (no network)."""

from __future__ import annotations

import json
import socket

import pytest

from powercontext.core.redaction_detectors import redact
from powercontext.pipeline.generation import ExperienceItem, MemoryItem, Projection, SessionSource
from powercontext.pipeline.generators.openai import (
    INSTRUCTIONS_VERSION,
    OUTPUT_SCHEMA,
    OpenAIGenerator,
)
from tests.context_api.fake_http import FakeServer
from tests.pipeline.secret_corpus import CORPUS

API_KEY = "sk-fake-test-key-0000"


@pytest.fixture
def server():
    fake = FakeServer()
    yield fake
    fake.close()


def make_generator(server, **overrides):
    values = {"base_url": server.url + "/v1", "model": "test-model", "api_key": API_KEY, "timeout": 5.0}
    values.update(overrides)
    return OpenAIGenerator(**values)


def make_projection(*contents):
    sources = tuple(
        SessionSource(source_id=f"src-{index}", position=index, content=content, metadata={"kind": "prompt"})
        for index, content in enumerate(contents or ("remember: we deploy on Tuesdays",), start=1)
    )
    return Projection(scope_id="team-a", session_id="session-1", sources=sources)


def completion(content, usage=None):
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": usage or {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
    }


VALID = {
    "memories": [{"kind": "decision", "text": "We deploy on Tuesdays.", "evidence": ["src-1"]}],
    "experiences": [
        {
            "situation": "Deploy failed on Friday",
            "action": "Moved deploys to Tuesday",
            "outcome": "succeeded",
            "lesson": "Avoid Friday deploys.",
            "evidence": ["src-1"],
        }
    ],
}


def test_valid_items_are_an_output_with_usage(server):
    server.respond(200, completion(json.dumps(VALID)))

    result = make_generator(server).generate(make_projection())

    assert result.outcome == "output"
    assert result.error_code is None
    assert result.memories == (MemoryItem("decision", "We deploy on Tuesdays.", ("src-1",)),)
    assert result.experiences == (
        ExperienceItem(
            "Deploy failed on Friday",
            "Moved deploys to Tuesday",
            "succeeded",
            "Avoid Friday deploys.",
            ("src-1",),
        ),
    )
    assert dict(result.usage) == {"input_tokens": 120, "output_tokens": 30}


def test_empty_lists_are_a_no_output(server):
    server.respond(200, completion(json.dumps({"memories": [], "experiences": []})))

    result = make_generator(server).generate(make_projection())

    assert (result.outcome, result.error_code, result.memories, result.experiences) == (
        "no_output",
        None,
        (),
        (),
    )
    assert dict(result.usage) == {"input_tokens": 120, "output_tokens": 30}


@pytest.mark.parametrize(
    "content",
    [
        "Sure! Here are the memories: ...",
        json.dumps({"memories": []}),
        json.dumps({"memories": [], "experiences": [], "extra": 1}),
        json.dumps({"memories": [{"kind": "fact", "text": "x"}], "experiences": []}),
        json.dumps({"memories": [{"kind": "fact", "text": "x", "evidence": []}], "experiences": []}),
        json.dumps({"memories": [{"kind": "fact", "text": 3, "evidence": ["src-1"]}], "experiences": []}),
        json.dumps({"memories": {}, "experiences": []}),
        json.dumps([]),
        None,
    ],
    ids=[
        "prose",
        "missing-key",
        "extra-key",
        "no-evidence",
        "empty-evidence",
        "wrong-type",
        "object",
        "array",
        "null",
    ],
)
def test_an_answer_off_the_schema_is_schema_invalid(server, content):
    server.respond(200, completion(content))

    result = make_generator(server).generate(make_projection())

    assert (result.outcome, result.error_code) == ("schema_invalid", "schema_invalid")
    assert result.memories == () and result.experiences == ()
    assert dict(result.usage) == {"input_tokens": 120, "output_tokens": 30}


def test_a_provider_that_does_not_answer_in_time_is_a_timeout(server):
    server.respond(200, completion(json.dumps(VALID)), hold=True)  # held until server.release

    result = make_generator(server, timeout=0.2).generate(make_projection())

    assert (result.outcome, result.error_code) == ("failed", "timeout")


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (429, "rate_limited"),
        (500, "provider_error"),
        (503, "provider_error"),
        (401, "auth_failed"),
        (403, "auth_failed"),
        (400, "request_rejected"),
    ],
)
def test_provider_statuses_map_to_failure_codes(server, status, code):
    server.respond(status, {"error": {"message": "scripted"}})

    result = make_generator(server).generate(make_projection())

    assert (result.outcome, result.error_code) == ("failed", code)
    assert dict(result.usage) == {}


def test_a_malformed_envelope_is_a_provider_error(server):
    server.respond(200, raw=b"<html>gateway</html>", content_type="text/html")

    result = make_generator(server).generate(make_projection())

    assert (result.outcome, result.error_code) == ("failed", "provider_error")


def test_no_listener_is_unavailable():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again before the call: nothing listens there

    result = OpenAIGenerator(
        base_url=f"http://127.0.0.1:{port}/v1", model="m", api_key=API_KEY, timeout=2.0
    ).generate(make_projection())

    assert (result.outcome, result.error_code) == ("failed", "unavailable")


def test_a_missing_base_url_or_model_is_not_configured():
    result = OpenAIGenerator(base_url="", model="", api_key="", timeout=1.0).generate(make_projection())

    assert (result.outcome, result.error_code) == ("failed", "not_configured")


def test_the_request_carries_schema_model_instructions_version_and_bearer_key(server):
    server.respond(200, completion(json.dumps(VALID)))

    make_generator(server).generate(make_projection("first prompt", "second prompt"))

    request = server.last
    body = request.json()
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["Authorization"] == f"Bearer {API_KEY}"
    assert body["model"] == "test-model"
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["strict"] is True
    assert body["response_format"]["json_schema"]["schema"] == OUTPUT_SCHEMA
    system, user = body["messages"]
    assert system["role"] == "system" and INSTRUCTIONS_VERSION in system["content"]
    assert "untrusted" in system["content"] and "empty lists" in system["content"].lower()
    session = json.loads(user["content"])
    assert session["instructions_version"] == INSTRUCTIONS_VERSION
    assert [(s["source_id"], s["content"]) for s in session["sources"]] == [
        ("src-1", "first prompt"),
        ("src-2", "second prompt"),
    ]


def test_the_key_stays_out_of_the_body_logs_and_repr(server, caplog):
    server.respond(500, {"error": {}})
    generator = make_generator(server)

    with caplog.at_level("DEBUG"):
        generator.generate(make_projection("remember: the content stays private"))

    assert API_KEY.encode() not in server.last.body
    assert API_KEY not in repr(generator)
    assert API_KEY not in caplog.text
    assert "content stays private" not in caplog.text


def test_a_secret_redacted_by_the_caller_never_reaches_the_provider(server):
    server.respond(200, completion(json.dumps({"memories": [], "experiences": []})))
    raw = [case.text for case in CORPUS]

    make_generator(server).generate(make_projection(*(redact(text).text for text in raw)))

    body = server.last.body.decode()
    sent = "\n".join(
        s["content"] for s in json.loads(server.last.json()["messages"][1]["content"])["sources"]
    )
    assert not [case.name for case in CORPUS if case.secret in body or case.secret in sent]
    assert "[REDACTED:aws_access_key]" in sent


def test_it_reads_its_configuration_from_settings(settings, server):
    settings.POWERCONTEXT_OPENAI_BASE_URL = server.url + "/v1"
    settings.POWERCONTEXT_OPENAI_MODEL = "settings-model"
    settings.POWERCONTEXT_OPENAI_API_KEY = API_KEY
    settings.POWERCONTEXT_OPENAI_TIMEOUT = 3.0
    server.respond(200, completion(json.dumps(VALID)))

    result = OpenAIGenerator().generate(make_projection())

    assert result.outcome == "output"
    assert server.last.json()["model"] == "settings-model"
    assert server.last.headers["Authorization"] == f"Bearer {API_KEY}"
