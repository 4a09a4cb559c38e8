"""Why a prepare produced what it did: the builder's per-candidate decisions, for operators.

Pure module: standard library and the builder only. ``explain`` runs the real
``PreparedContextBuilder.build`` (so the result, and every invariant failure, is the builder's
own) and replays its selection with the builder's own helpers to say, for each candidate in
search order, what happened to it:

- ``admitted``: rendered, with its item and content sizes and whether (and by what) it was cut;
- ``duplicate``: an earlier hit of the same source had the same citation (``duplicate_of``);
- ``skipped`` with a ``reason``: ``blank`` (blank text, id or field), ``unencodable`` (a lone
  surrogate), ``item_limit`` (its source already had its item limit of candidates),
  ``total_item_limit`` (the response already held ``TOTAL_ITEM_LIMIT`` items), ``over_budget``
  (neither whole nor truncated to at least ``MIN_TRUNCATED_BYTES`` did it fit the remaining
  bytes) or ``window`` (beyond the candidate window; the builder never sees it).

The trace never contains hit text, only sizes. The replayed byte accounting is checked against
the built content; a disagreement raises ``BuilderInvariantError`` rather than explain wrongly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from powercontext.prepare.builder import (
    _EMPTY_ENVELOPE_BYTES,
    EXPERIENCE_CANDIDATE_WINDOW,
    EXPERIENCE_FAMILY,
    EXPERIENCE_ITEM_LIMIT,
    MEMORY_CANDIDATE_WINDOW,
    MEMORY_FAMILY,
    MEMORY_ITEM_LIMIT,
    TOTAL_ITEM_LIMIT,
    ArtifactRef,
    BuilderInvariantError,
    ExperienceHit,
    MemoryHit,
    PreparedContext,
    PreparedContextBuilder,
    _Candidate,
    _capped,
    _encodable,
    _experience_candidate,
    _fit,
    _is_blank,
    _memory_candidate,
    _memory_frame_base,
    _ref_dict,
    _utf8_len,
    render_experience_content,
)

ADMITTED = "admitted"
DUPLICATE = "duplicate"
SKIPPED = "skipped"


@dataclass
class CandidateTrace:
    """One hit and what the builder did with it (sizes only, never text)."""

    source: str  # "memory" | "experience"
    rank: int  # 1-based position in its source's search order
    citation: dict[str, Any]
    source_chars: int  # the hit text (Memory) or the four rendered fields (Experience)
    source_bytes: int
    score: float | None = None
    matched_by: tuple[str, ...] | None = None
    decision: str = SKIPPED
    reason: str | None = None
    duplicate_of: int | None = None  # rank of the first hit with the same citation
    attempt: int | None = None  # 1-based position in the interleaved order the builder tried
    item_bytes: int = 0  # the rendered item, citation and JSON framing included
    content_bytes: int = 0  # the item's content string
    truncated: bool = False
    truncated_by: str | None = None  # "source_cap" | "budget"

    def as_dict(self) -> dict[str, Any]:
        result = asdict(self)
        if self.matched_by is not None:
            result["matched_by"] = list(self.matched_by)
        return result


@dataclass(frozen=True)
class Explanation:
    max_bytes: int
    memory_ref: ArtifactRef | None
    prepared: PreparedContext
    candidates: tuple[CandidateTrace, ...] = field(default_factory=tuple)

    @property
    def admitted(self) -> list[CandidateTrace]:
        """Admitted candidates in rendering order."""
        return sorted((c for c in self.candidates if c.decision == ADMITTED), key=lambda c: c.attempt or 0)

    def as_dict(self) -> dict[str, Any]:
        return {
            "memory_ref": _ref_dict(self.memory_ref) if self.memory_ref is not None else None,
            "max_bytes": self.max_bytes,
            "status": self.prepared.status,
            "content_bytes": self.prepared.content_bytes,
            "admitted": len(self.admitted),
            "candidates": [c.as_dict() for c in self.candidates],
        }


def _skip(trace: CandidateTrace, reason: str) -> None:
    trace.decision, trace.reason = SKIPPED, reason


def _triage(
    traces: list[CandidateTrace], keys: Sequence[object], usable: Sequence[str | None], limit: int
) -> list[int]:
    """The builder's dedup-then-skip pass: indexes of the selected candidates, traces updated."""
    first_rank: dict[object, int] = {}
    selected: list[int] = []
    for index, (trace, key, problem) in enumerate(zip(traces, keys, usable, strict=True)):
        if len(selected) == limit:
            _skip(trace, "item_limit")
            continue
        if key in first_rank:
            trace.decision, trace.duplicate_of = DUPLICATE, first_rank[key]
            continue
        first_rank[key] = trace.rank
        if problem is not None:
            _skip(trace, problem)
            continue
        selected.append(index)
    return selected


def _problem(*fields: str) -> str | None:
    if any(_is_blank(value) for value in fields):
        return "blank"
    if not _encodable(*fields):
        return "unencodable"
    return None


def _sizes(text: str) -> tuple[int, int]:
    try:
        return len(text), _utf8_len(text)
    except UnicodeEncodeError:
        return len(text), len(text.encode("utf-8", "replace"))


def explain(
    *,
    memory_ref: ArtifactRef | None,
    memory_hits: Sequence[MemoryHit],
    experience_hits: Sequence[ExperienceHit],
    max_bytes: int,
    prepared: PreparedContext | None = None,
) -> Explanation:
    """The builder's result for these inputs and the decision it took on every hit.

    Hits beyond the candidate windows are reported as skipped (``window``) and not passed on;
    every other invariant failure is the builder's own ``BuilderInvariantError``. A caller that
    already built these inputs (prepare itself) passes its ``prepared`` result, which is then
    not rebuilt but still checked against the replay.
    """
    memory_hits, memory_extra = (
        tuple(memory_hits[:MEMORY_CANDIDATE_WINDOW]),
        memory_hits[MEMORY_CANDIDATE_WINDOW:],
    )
    experience_hits, experience_extra = (
        tuple(experience_hits[:EXPERIENCE_CANDIDATE_WINDOW]),
        experience_hits[EXPERIENCE_CANDIDATE_WINDOW:],
    )
    if prepared is None:
        prepared = PreparedContextBuilder().build(
            memory_ref=memory_ref,
            memory_hits=memory_hits,
            experience_hits=experience_hits,
            max_bytes=max_bytes,
        )

    memory_traces = [
        CandidateTrace(
            MEMORY_FAMILY,
            rank,
            {"entry_id": hit.entry_id, "entry_version_id": hit.entry_version_id},
            *_sizes(hit.text),
            score=hit.score,
            matched_by=tuple(hit.matched_by),
        )
        for rank, hit in enumerate((*memory_hits, *memory_extra), start=1)
    ]
    experience_traces = [
        CandidateTrace(
            EXPERIENCE_FAMILY,
            rank,
            {"artifact_ref": _ref_dict(hit.artifact_ref)},
            *_sizes(render_experience_content(hit.content)),
        )
        for rank, hit in enumerate((*experience_hits, *experience_extra), start=1)
    ]
    for trace in (*memory_traces[len(memory_hits) :], *experience_traces[len(experience_hits) :]):
        _skip(trace, "window")

    memory_selected = _triage(
        memory_traces[: len(memory_hits)],
        [(hit.entry_id, hit.entry_version_id) for hit in memory_hits],
        [_problem(hit.entry_id, hit.entry_version_id, hit.text) for hit in memory_hits],
        MEMORY_ITEM_LIMIT,
    )
    experience_selected = _triage(
        experience_traces[: len(experience_hits)],
        [hit.artifact_ref for hit in experience_hits],
        [_problem(hit.artifact_ref.artifact_id, *hit.content.values()) for hit in experience_hits],
        EXPERIENCE_ITEM_LIMIT,
    )

    memories: list[tuple[CandidateTrace, _Candidate]] = []
    if memory_selected:
        assert memory_ref is not None  # the builder refuses Memory hits without a head
        frame_base = _memory_frame_base(memory_ref)
        memories = [
            (memory_traces[i], _memory_candidate(memory_ref, memory_hits[i], frame_base))
            for i in memory_selected
        ]
    experiences = [
        (experience_traces[i], _experience_candidate(experience_hits[i])) for i in experience_selected
    ]
    ordered: list[tuple[CandidateTrace, _Candidate]] = []
    for index in range(max(len(memories), len(experiences))):
        ordered.extend(memories[index : index + 1])
        ordered.extend(experiences[index : index + 1])

    total = _EMPTY_ENVELOPE_BYTES
    admitted = 0
    for attempt, (trace, candidate) in enumerate(ordered, start=1):
        if admitted >= TOTAL_ITEM_LIMIT:
            _skip(trace, "total_item_limit")
            continue
        trace.attempt = attempt
        separator = 1 if admitted else 0
        fitted = _fit(candidate, max_bytes - total - separator)
        if fitted is None:
            _skip(trace, "over_budget")
            continue
        item, size = fitted
        admitted += 1
        total += separator + size
        trace.decision = ADMITTED
        trace.item_bytes = size
        trace.content_bytes = _utf8_len(item["content"])
        trace.truncated = bool(item["truncated"])
        if trace.truncated:
            capped, _ = _capped(candidate.source)
            trace.truncated_by = "source_cap" if item["content"] == capped else "budget"

    expected = total if admitted else 0
    if expected != prepared.content_bytes:
        raise BuilderInvariantError("explained selection disagrees with the built content")
    return Explanation(
        max_bytes=max_bytes,
        memory_ref=memory_ref,
        prepared=prepared,
        candidates=(*memory_traces, *experience_traces),
    )


SKIP_REASONS = ("blank", "unencodable", "item_limit", "total_item_limit", "over_budget", "window")
TRUNCATION_CAUSES = ("source_cap", "budget")


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
    """Count what the builder did with the candidates of one prepare."""
    traces = explanation.candidates

    def count(source: str, decision: str) -> int:
        return sum(1 for t in traces if t.source == source and t.decision == decision)

    return Summary(
        empty=explanation.prepared.content is None,
        memory_candidates=sum(1 for t in traces if t.source == MEMORY_FAMILY),
        experience_candidates=sum(1 for t in traces if t.source == EXPERIENCE_FAMILY),
        memory_admitted=count(MEMORY_FAMILY, ADMITTED),
        experience_admitted=count(EXPERIENCE_FAMILY, ADMITTED),
        duplicates=sum(1 for t in traces if t.decision == DUPLICATE),
        skipped=tuple(sum(1 for t in traces if t.reason == reason) for reason in SKIP_REASONS),
        truncated=tuple(sum(1 for t in traces if t.truncated_by == cause) for cause in TRUNCATION_CAUSES),
        content_bytes=explanation.prepared.content_bytes,
        max_bytes=explanation.max_bytes,
    )
