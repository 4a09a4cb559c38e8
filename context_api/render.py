"""Wire shapes of responses (closed objects: exactly the contract's keys)."""

from __future__ import annotations

from typing import Any

from powercontext.models import MEMORY_ARTIFACT_ID, MEMORY_FAMILY
from powercontext.selectors.memory import EntryView


def memory_ref(revision: int | None) -> dict[str, Any] | None:
    if revision is None:
        return None
    return {"family": MEMORY_FAMILY, "artifact_id": MEMORY_ARTIFACT_ID, "revision": revision}


def citation(revision: int, entry_id: str, entry_version_id: str) -> dict[str, Any]:
    return {"memory_ref": memory_ref(revision), "entry_id": entry_id, "entry_version_id": entry_version_id}


def memory_entry(entry: EntryView) -> dict[str, Any]:
    return {
        "citation": citation(entry.revision, entry.entry_id, entry.entry_version_id),
        "version": entry.version,
        "kind": entry.kind,
        "text": entry.text,
        "state": entry.state,
        "source_refs": entry.source_refs,
        "artifact_refs": entry.artifact_refs,
    }


def memory_mutation(revision: int, entry: EntryView | None) -> dict[str, Any]:
    return {"memory": memory_ref(revision), "entry": memory_entry(entry) if entry is not None else None}
