"""After an upgrade that changed the embedding model, vectors of the earlier model are embedded
again without an operator step: the primary model's embedder drops them when it starts (the
thread of the embedded default, the first sweep of a Celery worker process) and fills the gaps;
a process running the fallback model drops nothing, so two models never undo each other."""

from __future__ import annotations

from typing import Any

import pytest

from powercontext import search
from powercontext.core.models import MemoryEntryVector
from powercontext.search import tasks
from powercontext.search.vectors import embedding, pending
from tests.powercontext.factories import make_memory

PAINTING = "Ann painted a sunrise over the lake"
OTHER = "the weather was mild and sunny"


def models_of(scope_id: str) -> list[str]:
    return sorted(MemoryEntryVector.objects.filter(scope_id=scope_id).values_list("model", flat=True))


def age(scope_id: str) -> None:
    """Make the scope's vectors look like an earlier model's."""
    MemoryEntryVector.objects.filter(scope_id=scope_id).update(model=embedding.PINNED_MODEL_ID)


@pytest.mark.django_db
def test_vectors_of_an_earlier_model_are_dropped_and_embedded_again(embeddings: Any) -> None:
    make_memory("old", PAINTING)
    make_memory("old", OTHER)
    age("old")
    assert search.vector_search_memory("old", "artwork of the morning sky", 1) == []  # unusable

    assert pending.replace_other_model_vectors() == 2
    assert models_of("old") == []
    pending.embed_pending("old", until_done=True)

    assert models_of("old") == [embedding.MODEL_ID] * 2
    assert search.vector_search_memory("old", "artwork of the morning sky", 1)[0].text == PAINTING


@pytest.mark.django_db
def test_a_process_on_the_fallback_model_drops_nothing(
    embeddings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_memory("mixed", PAINTING)
    monkeypatch.setattr(embeddings, "model_id", embedding.PINNED_MODEL_ID)
    make_memory("mixed", OTHER)  # written by the fallback model
    assert sorted(models_of("mixed")) == sorted([embedding.MODEL_ID, embedding.PINNED_MODEL_ID])

    assert pending.replace_other_model_vectors() == 0
    assert len(models_of("mixed")) == 2


@pytest.mark.django_db(transaction=True)
def test_the_embedder_thread_replaces_them_when_it_starts(embeddings: Any, settings: Any) -> None:
    make_memory("upgraded", PAINTING)  # sync: embedded in the writer's transaction
    age("upgraded")
    settings.POWERCONTEXT_EMBED_WRITES = "async"

    assert pending.worker().wait_idle("upgraded", timeout=120)  # no signal: the start-up pass

    assert models_of("upgraded") == [embedding.MODEL_ID]


@pytest.mark.django_db
def test_the_sweep_replaces_them_once_per_worker_process(
    embeddings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[str] = []
    monkeypatch.setattr(tasks.embed_pending, "delay", sent.append)
    monkeypatch.setattr(tasks, "_replaced_other_model", type(tasks._replaced_other_model)())
    make_memory("swept", PAINTING)
    age("swept")

    assert tasks.embed_pending_sweep() == {"scopes": 1}
    assert sent == ["swept"] and models_of("swept") == []

    pending.embed_pending("swept", until_done=True)
    age("swept")
    assert tasks.embed_pending_sweep() == {"scopes": 0}  # not again in this process
    assert models_of("swept") == [embedding.PINNED_MODEL_ID]
