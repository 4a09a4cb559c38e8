"""Why a prepare produced what it did: the builder's trace, formatted for operators.

Pure module: standard library and the builder's public names only. The builder records its
decision on every hit as it builds (``Built.trace``); this module only formats that trace and the
skips selection made before the builder (``dropped``), never re-running any part of the build.
For each candidate in search order it says:

- ``admitted``: rendered, with its item and content sizes and whether (and by what) it was cut;
- ``duplicate``: an earlier hit of the same source had the same citation (``duplicate_of``), or,
  with the reason ``near_identical`` (decided by selection, before the builder), the same words
  in the same order under another citation;
- ``skipped`` with a ``reason``: ``blank`` (blank text, id or field), ``unencodable`` (a lone
  surrogate), ``item_limit`` (its source already had its item limit of candidates),
  ``total_item_limit`` (the response already held ``TOTAL_ITEM_LIMIT`` items), ``over_budget``
  (neither whole nor truncated to at least ``MIN_TRUNCATED_BYTES`` did it fit the remaining
  bytes), ``window`` (beyond the candidate window; the builder never sees it) or a reason of
  selection's own for a hit it dropped before the builder: ``below_relevance_floor``,
  ``held_by_reports`` or ``below_pack_cut`` (after the pack's cut, ``powercontext.prepare.cut``).

The formatted trace never contains hit text, only sizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from powercontext.prepare.builder import (
    ADMITTED,
    DUPLICATE,
    EXPERIENCE_FAMILY,
    MEMORY_FAMILY,
    SKIP_REASONS,
    TRUNCATION_CAUSES,
    ArtifactRef,
    Built,
    Decision,
    MemoryHit,
    PreparedContext,
    render_experience_content,
)

__all__ = [
    "SKIP_REASONS",
    "TRUNCATION_CAUSES",
    "Explanation",
    "Summary",
    "candidate_dict",
    "citation",
    "explain",
    "source_text",
    "summarize",
]


def _ref_dict(ref: ArtifactRef) -> dict[str, Any]:
    return {"family": ref.family, "artifact_id": ref.artifact_id, "revision": ref.revision}


def citation(decision: Decision) -> dict[str, Any]:
    """The candidate's citation (a Memory hit's head is the explanation's ``memory_ref``)."""
    hit = decision.hit
    if isinstance(hit, MemoryHit):
        return {"entry_id": hit.entry_id, "entry_version_id": hit.entry_version_id}
    return {"artifact_ref": _ref_dict(hit.artifact_ref)}


def source_text(decision: Decision) -> str:
    """The hit text (Memory) or the four rendered fields (Experience): what the item cuts."""
    hit = decision.hit
    return hit.text if isinstance(hit, MemoryHit) else render_experience_content(hit.content)


def _sizes(text: str) -> tuple[int, int]:
    try:
        return len(text), len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return len(text), len(text.encode("utf-8", "replace"))


def candidate_dict(decision: Decision) -> dict[str, Any]:
    """One candidate for operators: citation, sizes, ranking and the decision (never text)."""
    hit = decision.hit
    memory = hit if isinstance(hit, MemoryHit) else None
    chars, size = _sizes(source_text(decision))
    return {
        "source": decision.source,
        "rank": decision.rank,
        "citation": citation(decision),
        "source_chars": chars,
        "source_bytes": size,
        "score": memory.score if memory is not None else None,
        "matched_by": list(memory.matched_by) if memory is not None else None,
        # The relevance floor's figures (``powercontext.search.ranking.relevance``): raw cosine to
        # the query and the share of the query's word weight the hit covers; None when not measured.
        "similarity": hit.similarity,
        "lexical_share": hit.lexical_share,
        "decision": decision.decision,
        "reason": decision.reason,
        "duplicate_of": decision.duplicate_of,
        "attempt": decision.attempt,
        "item_bytes": decision.item_bytes,
        "content_bytes": decision.content_bytes,
        "truncated": decision.truncated,
        "truncated_by": decision.truncated_by,
    }


@dataclass(frozen=True)
class Explanation:
    max_bytes: int
    memory_ref: ArtifactRef | None
    prepared: PreparedContext
    candidates: tuple[Decision, ...] = field(default_factory=tuple)

    @property
    def admitted(self) -> list[Decision]:
        """Admitted candidates in rendering order."""
        return sorted((c for c in self.candidates if c.decision == ADMITTED), key=lambda c: c.attempt or 0)

    def as_dict(self) -> dict[str, Any]:
        return {
            "memory_ref": _ref_dict(self.memory_ref) if self.memory_ref is not None else None,
            "max_bytes": self.max_bytes,
            "status": self.prepared.status,
            "content_bytes": self.prepared.content_bytes,
            "admitted": len(self.admitted),
            "candidates": [candidate_dict(c) for c in self.candidates],
        }


_SOURCE_ORDER = {MEMORY_FAMILY: 0, EXPERIENCE_FAMILY: 1}


def explain(
    built: Built,
    *,
    memory_ref: ArtifactRef | None,
    max_bytes: int,
    dropped: Sequence[Decision] = (),
) -> Explanation:
    """The built result with every candidate's decision: the builder's trace plus the hits
    selection ``dropped`` before the builder, each source in rank order (Memory first)."""
    candidates = built.trace
    if dropped:
        candidates = tuple(
            sorted((*built.trace, *dropped), key=lambda c: (_SOURCE_ORDER.get(c.source, 2), c.rank))
        )
    return Explanation(
        max_bytes=max_bytes, memory_ref=memory_ref, prepared=built.context, candidates=candidates
    )


@dataclass(frozen=True)
class Summary:
    """The metadata of one prepare, for the per-scope aggregates: counts and sizes only.

    Never a query, a text, an id or a citation; ``skipped`` and ``truncated`` have one count per
    name of ``SKIP_REASONS`` / ``TRUNCATION_CAUSES``, in that order.
    """

    empty: bool
    memory_candidates: int
    experience_candidates: int
    memory_admitted: int
    experience_admitted: int
    duplicates: int
    skipped: tuple[int, ...]
    truncated: tuple[int, ...]
    content_bytes: int
    max_bytes: int


def summarize(explanation: Explanation) -> Summary:
    """Count what the builder did with the candidates of one prepare (one pass over the trace)."""
    sources = {MEMORY_FAMILY: [0, 0], EXPERIENCE_FAMILY: [0, 0]}  # candidates, admitted
    skipped = dict.fromkeys(SKIP_REASONS, 0)
    truncated = dict.fromkeys(TRUNCATION_CAUSES, 0)
    duplicates = 0
    for candidate in explanation.candidates:
        counts = sources[candidate.source]
        counts[0] += 1
        if candidate.decision == ADMITTED:
            counts[1] += 1
            if candidate.truncated_by in truncated:
                truncated[candidate.truncated_by] += 1
        elif candidate.decision == DUPLICATE:
            duplicates += 1
        elif candidate.reason in skipped:
            skipped[candidate.reason] += 1
    return Summary(
        empty=explanation.prepared.content is None,
        memory_candidates=sources[MEMORY_FAMILY][0],
        experience_candidates=sources[EXPERIENCE_FAMILY][0],
        memory_admitted=sources[MEMORY_FAMILY][1],
        experience_admitted=sources[EXPERIENCE_FAMILY][1],
        duplicates=duplicates,
        skipped=tuple(skipped.values()),
        truncated=tuple(truncated.values()),
        content_bytes=explanation.prepared.content_bytes,
        max_bytes=explanation.max_bytes,
    )
