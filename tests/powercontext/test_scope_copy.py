"""The fleet benchmark's scope copy (``evaluation.bench.scope_copy``): the copy has rows of its
own that the index verification accepts and every search mode finds, on both databases."""

from __future__ import annotations

import io
import json
from typing import Any
from unittest import mock

import pytest
from django.core.management import call_command

from powercontext.core.models import (
    MemoryEntryVector,
    MemoryEntryVersion,
    MemoryMembership,
    MemorySearchDocument,
)
from powercontext.evaluation.bench import scale
from powercontext.evaluation.bench.scope_copy import CopyRefused, copy_scope
from powercontext.memory import selectors
from powercontext.memory.services import memory_revise
from powercontext.search.vectors import pending
from tests.powercontext.factories import citation_of, make_memory

SOURCE, TARGET = "copy-source", "copy-target"
MODELS = (MemoryMembership, MemoryEntryVersion, MemoryEntryVector, MemorySearchDocument)


def rows(scope_id: str) -> dict[str, int]:
    return {model.__name__: model.objects.filter(scope_id=scope_id).count() for model in MODELS}


def verify(scope_id: str) -> dict[str, Any]:
    out = io.StringIO()
    call_command("rebuild_search_index", "--verify-only", "--scope", scope_id, stdout=out)
    return dict(json.loads(out.getvalue().strip().splitlines()[-1]))


@pytest.mark.django_db(transaction=True)
def test_a_copied_scope_has_its_own_rows_and_searches_like_its_source(embeddings: Any) -> None:
    ledger = make_memory(SOURCE, "The harbour ledger is backed up nightly with pg_dump.")
    memory_revise(
        scope_id=SOURCE,
        citation=citation_of(ledger),
        kind="note",
        text="The harbour ledger is backed up every night with pg_dump and restored weekly.",
    )
    make_memory(SOURCE, "Deploys run on Fridays after the release review.")
    assert pending.wait_until_embedded(SOURCE, 60)
    before = rows(SOURCE)

    copied = copy_scope(SOURCE, TARGET)

    assert copied == before["MemoryMembership"] == 3  # a superseded membership, two open ones
    assert rows(TARGET) == before and rows(SOURCE) == before
    source_ids = set(MemoryMembership.objects.filter(scope_id=SOURCE).values_list("pk", flat=True))
    assert source_ids.isdisjoint(
        MemoryMembership.objects.filter(scope_id=TARGET).values_list("pk", flat=True)
    )
    report = verify(TARGET)
    assert report["ok"] and report["checked"] == 2 and report["vectors"]["missing"] == 0, report
    for mode in ("fts", "vector"):
        found = selectors.memory_search(
            scope_id=TARGET, query="when is the harbour ledger backed up", limit=1, mode=mode
        )
        original = selectors.memory_search(
            scope_id=SOURCE, query="when is the harbour ledger backed up", limit=1, mode=mode
        )
        assert [hit.entry_version_id for hit in found.hits] == [
            hit.entry_version_id for hit in original.hits
        ], mode
        assert found.hits and "restored weekly" in found.hits[0].text
    with pytest.raises(CopyRefused):
        copy_scope(SOURCE, TARGET)


@pytest.mark.django_db(transaction=True)
def test_a_fleet_of_copies_seeds_and_embeds_the_first_scope_and_copies_it(embeddings: Any) -> None:
    said: list[str] = []
    embedded: list[str] = []
    real = type(embeddings).embed

    def counted(self: Any, text: str) -> Any:
        embedded.append(text)
        return real(self, text)

    with mock.patch.object(type(embeddings), "embed", counted):
        names = scale.fleet(3, 4, said.append, copies=True)

    assert len(embedded) == 4  # the first scope's notes: the copies carry its vectors

    assert names == ["scale-fleet-0", "scale-fleet-1", "scale-fleet-2"]
    texts = [
        sorted(MemoryEntryVersion.objects.filter(scope_id=name).values_list("text", flat=True))
        for name in names
    ]
    assert len(texts[0]) == 4 and texts[1] == texts[0] and texts[2] == texts[0]
    assert [rows(name)["MemoryEntryVector"] for name in names] == [4, 4, 4]
    assert said and "fleet_ready_seconds" in said[-1]
    # A second run keeps the fleet as it is.
    assert scale.fleet(3, 4, said.append, copies=True) == names
    assert [rows(name) for name in names[1:]] == [rows(names[0])] * 2
