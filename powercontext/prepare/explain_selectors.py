"""Explain one prepare for operators: the one function behind ``manage.py explain_prepare`` and
the admin page "Explain a prepare".

It reads exactly what ``POST /v1/context/prepare`` reads (``context_candidates``, the same
search mode) and runs the same builder through the pure ``powercontext.prepare.explain``. Nothing is
written and nothing is logged. Hit text appears only when asked for, and then only each hit's
first ``PREVIEW_CHARS`` characters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from powercontext import search
from powercontext.prepare.builder import (
    EXPERIENCE_CANDIDATE_WINDOW,
    MEMORY_CANDIDATE_WINDOW,
    render_experience_content,
)
from powercontext.prepare.explain import CandidateTrace, Explanation, explain
from powercontext.prepare.selection import context_candidates
from powercontext.search import vector_inprocess

PREVIEW_CHARS = 40
ID_CHARS = 12


def short(value: str) -> str:
    return value if len(value) <= ID_CHARS else value[: ID_CHARS - 1] + "\u2026"


def citation_label(trace: CandidateTrace) -> str:
    if "artifact_ref" in trace.citation:
        ref = trace.citation["artifact_ref"]
        return f"{short(ref['artifact_id'])}@{ref['revision']}"
    return f"{short(trace.citation['entry_id'])}/{short(trace.citation['entry_version_id'])}"


def outcome(trace: CandidateTrace) -> str:
    if trace.decision == "admitted":
        cut = f" truncated({trace.truncated_by})" if trace.truncated else ""
        return f"admitted {trace.content_bytes}B content, {trace.item_bytes}B item{cut}"
    if trace.decision == "duplicate":
        return f"duplicate of #{trace.duplicate_of}"
    return f"skipped: {trace.reason}"


@dataclass(frozen=True)
class ExplainRow:
    """One candidate as both renderers show it (strings; the page escapes them)."""

    source: str
    rank: str
    attempt: str
    citation: str
    score: str
    matched_by: str
    chars: str
    decision: str
    outcome: str
    preview: str | None  # the first PREVIEW_CHARS characters, only when text was asked for


@dataclass(frozen=True)
class ExplainReport:
    scope_id: str
    search_mode: str
    explanation: Explanation
    previews: dict[tuple[str, int], str] | None
    # This process's vector cache after the prepare (``vector_inprocess.cache_stats``: bytes
    # held, the bound, scopes cached); None when the mode used no vectors (fts).
    vector_cache: dict[str, int] | None = None

    @property
    def head(self) -> str:
        ref = self.explanation.memory_ref
        return f"{ref.artifact_id}@{ref.revision}" if ref is not None else "none (no Memory hit)"

    @property
    def vector_cache_label(self) -> str | None:
        """The cache line both renderers show: "vector cache 14.7 of 256 MiB, 1 scope"."""
        if self.vector_cache is None:
            return None
        used = self.vector_cache["bytes"] / vector_inprocess.MIB
        bound = self.vector_cache["bound_bytes"] / vector_inprocess.MIB
        scopes = self.vector_cache["scopes"]
        return f"vector cache {used:.1f} of {bound:g} MiB, {scopes} scope{'' if scopes == 1 else 's'}"

    @property
    def budget_percent(self) -> int:
        return self.explanation.prepared.content_bytes * 100 // self.explanation.max_bytes

    def rows(self) -> list[ExplainRow]:
        return [
            ExplainRow(
                source=trace.source,
                rank=str(trace.rank),
                attempt=str(trace.attempt or "-"),
                citation=citation_label(trace),
                score=f"{trace.score:.4f}" if trace.score is not None else "-",
                matched_by="+".join(trace.matched_by) if trace.matched_by else "-",
                chars=str(trace.source_chars),
                decision=trace.decision,
                outcome=outcome(trace),
                preview=self.previews[(trace.source, trace.rank)] if self.previews is not None else None,
            )
            for trace in self.explanation.candidates
        ]

    def as_dict(self) -> dict[str, Any]:
        body = {
            "scope_id": self.scope_id,
            "search_mode": self.search_mode,
            "vector_cache": self.vector_cache,
            **self.explanation.as_dict(),
        }
        if self.previews is not None:
            for row, trace in zip(body["candidates"], self.explanation.candidates, strict=True):
                row["text_preview"] = self.previews[(trace.source, trace.rank)]
        return body


def _preview(text: str) -> str:
    return text[:PREVIEW_CHARS] + ("\u2026" if len(text) > PREVIEW_CHARS else "")


def prepare_explain(*, scope_id: str, query: str, max_bytes: int, show_text: bool = False) -> ExplainReport:
    """What a prepare of ``query`` in ``scope_id`` would produce now, candidate by candidate.

    The caller validates its input (non-blank scope and query, ``max_bytes`` within the
    contract's range); raises ``BuilderInvariantError`` when the builder's invariants fail.
    """
    mode = search.best_mode()
    found = context_candidates(
        scope_id=scope_id,
        query=query,
        memory_limit=MEMORY_CANDIDATE_WINDOW,
        experience_limit=EXPERIENCE_CANDIDATE_WINDOW,
    )
    explained = explain(
        memory_ref=found.memory_ref,
        memory_hits=found.memory_hits,
        experience_hits=found.experience_hits,
        max_bytes=max_bytes,
    )
    previews = None
    if show_text:
        previews = {
            **{("memory", rank): _preview(hit.text) for rank, hit in enumerate(found.memory_hits, start=1)},
            **{
                ("experience", rank): _preview(render_experience_content(hit.content))
                for rank, hit in enumerate(found.experience_hits, start=1)
            },
        }
    cache = vector_inprocess.cache_stats() if mode in {"vector", "hybrid"} else None
    return ExplainReport(
        scope_id=scope_id,
        search_mode=mode,
        explanation=explained,
        previews=previews,
        vector_cache=cache,
    )
