"""The one redaction door (issue 33): a secret in any text that enters — remember and revise
(text and reason), proposals and their revisions, session notes, source content and metadata,
MCP arguments — is stored redacted, whichever way it came in; every shape of the secret corpus
(powercontext/evaluation/data/secrets.jsonl) at every door."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from powercontext.core.models import ArtifactRevision, MemoryEntryVersion, Source
from powercontext.evaluation import secret_corpus
from powercontext.recovery.models import SessionNoteVersion
from review.models import CandidateVersion
from tests.review.factories import experience_proposal, propose_body

SCOPE = "repo"
# Built at run time so that no secret-shaped literal sits in the repository.
GITHUB = "ghp_" + "Zq4Rt8Wm2Xy6Kp0Lv3Nb7Hc1Jd5Fg9Ss" + "Ae"
PGPASSWORD = "PGPASSWORD=" + "Hv7qT2mZ9xLp4Rw8"
SECRETS = (GITHUB, PGPASSWORD)


def _clean(text: str) -> None:
    assert GITHUB not in text and "Hv7qT2mZ9xLp4Rw8" not in text, text
    assert "[REDACTED:" in text, text


def _remember(api: Any, text: str, reason: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"scope_id": SCOPE, "kind": "note", "text": text}
    if reason is not None:
        body["reason"] = reason
    response = api.post("/v1/memory/remember", body)
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.parametrize("secret", SECRETS)
def test_remember_stores_text_and_reason_redacted(api: Any, secret: str) -> None:
    written = _remember(api, f"The deploy script exports {secret} before it runs.", f"seen with {secret}")
    _clean(written["entry"]["text"])
    version = MemoryEntryVersion.objects.get(scope_id=SCOPE)
    _clean(version.text)
    _clean(version.reason or "")
    changes = ArtifactRevision.objects.get(scope_id=SCOPE, family="memory").content["changes"]
    _clean(changes[0]["reason"])


def test_revise_stores_text_and_reason_redacted(api: Any) -> None:
    written = _remember(api, "The deploy script reads its token from the environment.")
    citation = written["entry"]["citation"]
    response = api.post(
        "/v1/memory/entries/revise",
        {
            "scope_id": SCOPE,
            "citation": citation,
            "kind": "note",
            "text": f"The deploy script uses {GITHUB} now.",
            "reason": f"rotated to {PGPASSWORD}",
        },
    )
    assert response.status_code == 200, response.content
    _clean(response.json()["entry"]["text"])
    newest = MemoryEntryVersion.objects.filter(scope_id=SCOPE).order_by("-version").first()
    assert newest is not None and newest.version == 2
    _clean(newest.text)
    _clean(newest.reason or "")


def test_two_remembers_differing_only_in_a_secret_are_one_entry(api: Any) -> None:
    first = _remember(api, f"CI exports {GITHUB} for the release job.")
    other = "ghp_" + "Wy3Qe7Rt1Yu5Io9Pa2Sd6Fg0Hj4Kl8Zx" + "Cv"
    second = _remember(api, f"CI exports {other} for the release job.")
    assert second["entry"] is None and second["memory"] == first["memory"]
    assert MemoryEntryVersion.objects.filter(scope_id=SCOPE).count() == 1


def test_a_proposal_is_stored_redacted_in_every_field_and_its_reason(api: Any) -> None:
    proposal = experience_proposal(
        action=f"exported {PGPASSWORD} and reran the migration", lesson=f"never paste {GITHUB} into chat"
    )
    body = propose_body(proposal=proposal, reason=f"found {GITHUB} in the log")
    response = api.post("/v1/experience/propose", body)
    assert response.status_code == 201, response.content
    _clean(response.json()["proposal"]["action"])
    _clean(response.json()["proposal"]["lesson"])
    version = CandidateVersion.objects.get()
    _clean(version.proposal["action"])
    _clean(version.proposal["lesson"])
    _clean(version.reason or "")
    assert version.proposal["situation"] == proposal["situation"]  # ordinary text is kept


def test_a_source_keeps_its_metadata_redacted(api: Any) -> None:
    metadata = {"command": f"psql with {PGPASSWORD}", "nested": [{"header": f"token {GITHUB}"}], "count": 3}
    response = api.post(
        "/v1/sources/content",
        {"scope_id": SCOPE, "source_id": "s-1", "content": "plain output", "metadata": metadata},
    )
    assert response.status_code == 202, response.content
    stored = Source.objects.get(scope_id=SCOPE, source_id="s-1").metadata
    _clean(stored["command"])
    _clean(stored["nested"][0]["header"])
    assert stored["count"] == 3
    # The same capture again is a retry, not a conflict: both are compared redacted.
    again = api.post(
        "/v1/sources/content",
        {"scope_id": SCOPE, "source_id": "s-1", "content": "plain output", "metadata": metadata},
    )
    assert again.status_code == 202, again.content


def test_mcp_arguments_pass_the_same_door(db: None) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "remember_memory",
            "arguments": {"scope_id": SCOPE, "kind": "note", "text": f"Release job uses {GITHUB}."},
        },
    }
    response = Client().post("/mcp", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    result = response.json()["result"]
    assert not result.get("isError"), result
    assert GITHUB not in json.dumps(result)
    _clean(MemoryEntryVersion.objects.get(scope_id=SCOPE).text)


# --- every shape of the secret corpus at every door ----------------------------------------------

CORPUS = [sample for sample in secret_corpus.load() if sample.secret]


def _survivors(texts: dict[str, str]) -> list[str]:
    """The corpus shapes whose secret survives in the stored text kept under the same key."""
    by_key = {f"{n}": sample for n, sample in enumerate(CORPUS)}
    return sorted(
        {by_key[key].shape for key, text in texts.items() if secret_corpus.survives(by_key[key].secret, text)}
    )


def test_every_corpus_shape_is_redacted_when_remembered(api: Any) -> None:
    stored: dict[str, str] = {}
    for n, sample in enumerate(CORPUS):
        written = _remember(api, f"{sample.text}\n(note {n})")
        if written["entry"] is not None:
            stored[str(n)] = MemoryEntryVersion.objects.get(
                entry_version_id=written["entry"]["citation"]["entry_version_id"]
            ).text
    assert len(stored) == len(CORPUS)
    assert _survivors(stored) == []


def test_every_corpus_shape_is_redacted_in_a_proposal(api: Any) -> None:
    stored: dict[str, str] = {}
    for n, sample in enumerate(CORPUS):
        body = propose_body(proposal=experience_proposal(action=sample.text))
        response = api.post("/v1/experience/propose", body)
        assert response.status_code == 201, (sample.shape, response.content)
        stored[str(n)] = CandidateVersion.objects.get(
            candidate__candidate_id=response.json()["candidate_id"]
        ).proposal["action"]
    assert _survivors(stored) == []


def test_every_corpus_shape_is_redacted_in_a_session_note(api: Any) -> None:
    stored: dict[str, str] = {}
    for n, sample in enumerate(CORPUS):
        body = {"scope_id": SCOPE, "session_id": "s-1", "path": f"note-{n}.md", "content": sample.text}
        response = api.post("/v1/sessions/notes/write", body)
        assert response.status_code == 200, (sample.shape, response.content)
        stored[str(n)] = SessionNoteVersion.objects.get(note__path=f"note-{n}.md").content
    assert _survivors(stored) == []


def test_every_corpus_shape_is_redacted_in_source_content_and_metadata(api: Any) -> None:
    content: dict[str, str] = {}
    metadata: dict[str, str] = {}
    for n, sample in enumerate(CORPUS):
        body = {
            "scope_id": SCOPE,
            "source_id": f"src-{n}",
            "content": sample.text,
            "metadata": {"command": sample.text, "session_id": "s-1"},
        }
        response = api.post("/v1/sources/content", body)
        assert response.status_code == 202, (sample.shape, response.content)
        row = Source.objects.get(scope_id=SCOPE, source_id=f"src-{n}")
        content[str(n)], metadata[str(n)] = row.content, row.metadata["command"]
    assert _survivors(content) == []
    assert _survivors(metadata) == []
