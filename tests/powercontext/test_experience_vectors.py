"""Experience vectors: one per recallable Experience head at its current revision, written by the
same paths as Memory's (``sync`` in the approving transaction, ``async`` by the embedder after
commit), rebuilt and verified with them, and fused into prepare's Experience window. Runs on
both databases."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction

from powercontext import search
from powercontext.models import Artifact, ExperienceVector
from powercontext.search import embedding, pending, rebuild
from powercontext.selectors.context import context_candidates
from review import services as review
from tests.review.factories import make_approved, make_candidate, make_reviewer, result_ref

# Shares no word (and no stem) with QUERY: only the vector ranking can find it.
STATUE = {
    "situation": "Bob carved a marble statue of a horse",
    "action": "he chiselled for weeks",
    "outcome": "the figure was finished",
    "lesson": "patience with marble",
}
QUERY = "stone sculpture showing an animal"
FILLER = [
    {
        "situation": f"the weather report number {n}",
        "action": "read the forecast",
        "outcome": "it was sunny",
        "lesson": "check the weather first",
    }
    for n in range(3)
]

# Shares one word ("showing") with QUERY and nothing of its meaning.
DASHBOARD = {
    "situation": "the dashboard was showing stale numbers",
    "action": "cleared the cache",
    "outcome": "fresh numbers",
    "lesson": "cache dashboards briefly",
}


def seed_window() -> None:
    """A word match, three unrelated heads, then the meaning match (approved last: largest pk)."""
    approve("ev", DASHBOARD)
    for proposal in FILLER:
        approve("ev", proposal)
    approve("ev", STATUE)


def approve(scope: str, proposal: dict[str, str], **fields: Any) -> Artifact:
    approved, _ = make_approved(scope, proposal=proposal, **fields)
    assert approved.result_head is not None
    return Artifact.objects.get(pk=approved.result_head.pk)


def vector_of(head: Artifact) -> ExperienceVector | None:
    return ExperienceVector.objects.filter(head_id=head.pk).first()


def prepare_body(api: Any, scope: str, query: str) -> dict[str, Any]:
    response = api.post("/v1/context/prepare", {"scope_id": scope, "query": query})
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


def window(scope: str, query: str) -> list[str]:
    found = context_candidates(scope_id=scope, query=query, memory_limit=16, experience_limit=2)
    return [hit.content.situation for hit in found.experience_hits]


@pytest.mark.django_db
def test_a_sync_approval_writes_the_vector_of_the_head_at_its_revision(embeddings: Any) -> None:
    head = approve("ev", STATUE)

    row = vector_of(head)
    assert row is not None
    assert (row.revision, row.scope_id, row.model) == (1, "ev", embedding.MODEL_ID)
    stored = embedding.from_bytes(row.vector)
    assert stored.tolist() == pytest.approx(embeddings.embed(head.searchable_text).tolist(), abs=1e-6)


@pytest.mark.django_db
def test_an_approval_never_fails_when_the_model_is_missing() -> None:
    head = approve("ev", STATUE)

    assert head.current_revision == 1 and vector_of(head) is None
    assert search.missing_vectors("ev", 10) == [(-head.pk, "ev", head.searchable_text)]
    assert window("ev", "marble statue") == [STATUE["situation"]]


@pytest.mark.django_db
def test_an_async_approval_is_embedded_after_commit(
    embeddings: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.POWERCONTEXT_EMBED_WRITES = "async"
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        head = approve("ev", STATUE)

    assert vector_of(head) is None and len(callbacks) == 1
    assert search.scopes_missing_vectors() == ["ev"]
    report = search.verify_index(scope_id="ev")
    assert report.ok and report.vectors_pending == 1

    run = pending.embed_pending("ev", until_done=True)

    assert (run.written, run.remaining) == (1, False)
    row = vector_of(head)
    assert row is not None and row.revision == 1
    assert search.missing_vectors("ev", 10) == []
    assert search.verify_index(scope_id="ev").vectors_pending == 0


@pytest.mark.django_db
def test_the_embedder_stores_nothing_for_a_head_that_moved_while_it_embedded(
    embeddings: Any, settings: Any
) -> None:
    settings.POWERCONTEXT_EMBED_WRITES = "async"
    head = approve("ev", STATUE)
    batch = search.missing_vectors("ev", 10)
    with transaction.atomic():
        Artifact.objects.filter(pk=head.pk).update(state=Artifact.State.RETIRED)

    assert rebuild.store_vectors(embeddings, batch) == 0
    assert vector_of(head) is None


@pytest.mark.django_db
def test_a_new_revision_replaces_the_vector_and_a_retired_head_loses_it(embeddings: Any) -> None:
    approved, first = make_approved("ev", proposal=STATUE)
    head = Artifact.objects.get(pk=approved.result_head_id)
    old = vector_of(head)
    assert old is not None

    candidate = make_candidate(
        "ev", proposal={**STATUE, "lesson": "a better lesson"}, artifact_refs=[first], target=first
    )
    review.candidate_approve(
        scope_id="ev", candidate_id=candidate.candidate_id, expected_version=1, reviewer=make_reviewer()
    )
    head.refresh_from_db()
    new = vector_of(head)
    assert new is not None and head.current_revision == 2
    assert new.revision == 2 and new.pk != old.pk and new.vector != old.vector
    assert result_ref(approved)["revision"] == 1

    with transaction.atomic():  # as a writer retiring the head would, in its transaction
        head.state = Artifact.State.RETIRED
        head.save(update_fields=["state"])
        search.index_experience_head(head)
    assert vector_of(head) is None
    assert search.verify_index(scope_id="ev").ok


@pytest.mark.django_db
def test_verify_counts_experience_vectors_and_repair_restores_them(embeddings: Any) -> None:
    heads = [approve("ev", STATUE), *(approve("ev", proposal) for proposal in FILLER)]
    assert search.verify_index().ok
    before = search.verify_index().vectors_checked

    ExperienceVector.objects.filter(head_id=heads[0].pk).delete()
    ExperienceVector.objects.filter(head_id=heads[1].pk).update(vector=b"\0" * 4 * embedding.DIMENSIONS)
    ExperienceVector.objects.filter(head_id=heads[2].pk).update(revision=7)
    retired = heads[3]
    Artifact.objects.filter(pk=retired.pk).update(state=Artifact.State.RETIRED)  # its vector is now extra
    report = search.verify_index()

    assert not report.ok
    assert (report.vectors_missing, report.vectors_mismatched, report.vectors_extra) == (1, 2, 1)
    assert report.vectors_checked == before - 1

    search.rebuild_index()
    assert search.verify_index().ok
    assert vector_of(heads[0]) is not None and vector_of(retired) is None
    assert ExperienceVector.objects.get(head_id=heads[2].pk).revision == 1


@pytest.mark.django_db
def test_prepare_ranks_an_experience_found_only_by_meaning_into_its_window(embeddings: Any) -> None:
    seed_window()
    lexical = [row.content["situation"] for row in search.search_experience("ev", QUERY, 32)]
    assert lexical == [DASHBOARD["situation"]]  # full text finds only the word match

    assert window("ev", QUERY) == [DASHBOARD["situation"], STATUE["situation"]]


@pytest.mark.django_db
def test_without_the_model_prepare_ranks_experience_by_full_text_alone() -> None:
    seed_window()

    assert window("ev", QUERY) == [DASHBOARD["situation"]]


@pytest.mark.django_db
def test_prepare_output_is_byte_identical_for_identical_inputs(embeddings: Any, api: Any) -> None:
    approve("ev", STATUE)
    for proposal in FILLER:
        approve("ev", proposal)
    api.remember("ev", "the horse statue stands in the garden")

    first = prepare_body(api, "ev", QUERY)
    second = prepare_body(api, "ev", QUERY)

    assert first["content"] == second["content"]
    assert STATUE["lesson"] in first["content"]
