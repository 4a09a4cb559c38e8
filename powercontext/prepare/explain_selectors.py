"""Explain one prepare for operators: the one function behind ``manage.py explain_prepare`` and
the admin page "Explain a prepare".

It reads exactly what ``POST /v1/context/prepare`` reads (``context_candidates``, the same
search mode), runs the same builder and formats its trace with the pure ``powercontext.prepare.explain``
(the builder's own decisions, not a replay of them). Nothing is
written and nothing is logged. Hit text appears only when asked for, and then only each hit's
first ``PREVIEW_CHARS`` characters.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from powercontext import search
from powercontext.feedback import selectors as feedback_selectors
from powercontext.feedback.prior import PriorPolicy, Usage
from powercontext.prepare import cut as pack_cut
from powercontext.prepare.builder import (
    EXPERIENCE_CANDIDATE_WINDOW,
    MEMORY_CANDIDATE_WINDOW,
    Decision,
    PreparedContextBuilder,
)
from powercontext.prepare.explain import Explanation, candidate_dict, citation, explain, source_text
from powercontext.prepare.selection import context_candidates, feedback_target
from powercontext.search.ranking import relevance
from powercontext.search.vectors import vector_cache, vector_inprocess

PREVIEW_CHARS = 40
ID_CHARS = 12


def short(value: str) -> str:
    return value if len(value) <= ID_CHARS else value[: ID_CHARS - 1] + "\u2026"


def citation_label(trace: Decision) -> str:
    cited = citation(trace)
    if "artifact_ref" in cited:
        ref = cited["artifact_ref"]
        return f"{short(ref['artifact_id'])}@{ref['revision']}"
    return f"{short(cited['entry_id'])}/{short(cited['entry_version_id'])}"


def outcome(trace: Decision) -> str:
    if trace.decision == "admitted":
        cut = f" truncated({trace.truncated_by})" if trace.truncated else ""
        return f"admitted {trace.content_bytes}B content, {trace.item_bytes}B item{cut}"
    if trace.decision == "duplicate":
        how = f" ({trace.reason})" if trace.reason else ""
        return f"duplicate of #{trace.duplicate_of}{how}"
    return f"skipped: {trace.reason}"


def _figure(value: float | None, digits: int = 2) -> str:
    return f"{value:.{digits}f}" if value is not None else "-"


@dataclass(frozen=True)
class ExplainRow:
    """One candidate as both renderers show it (strings; the page escapes them)."""

    source: str
    rank: str
    attempt: str
    citation: str
    score: str
    matched_by: str
    similarity: str
    lexical_share: str
    chars: str
    decision: str
    outcome: str
    preview: str | None  # the first PREVIEW_CHARS characters, only when text was asked for
    # Feedback (``powercontext.feedback``): "3 uses, last 2026-12-01" / "-", "outdated 2" / "-",
    # the prior ("+0.050" / "-").
    uses: str = "-"
    reports: str = "-"
    prior: str = "-"
    # The pack's cut: the hit's estimated chance of being evidence ("0.081"; "-" not judged).
    estimate: str = "-"


@dataclass(frozen=True)
class ExplainReport:
    scope_id: str
    search_mode: str
    explanation: Explanation
    show_text: bool
    # This process's vector cache after the prepare (``vector_cache.cache_stats``: bytes
    # held, the bound, scopes cached); None when the mode used no vectors (fts).
    vector_cache: dict[str, int] | None = None
    # How this process ranked the scope's Memory vectors (``vector_inprocess.memory_ranking``:
    # rows, and the shortlist's least depth, None when exact); None without vectors.
    vector_ranking: dict[str, int | None] | None = None
    # The relevance floors this query's candidates were judged by (with the query's language).
    floors: relevance.QueryFloor | None = None
    # The candidates' feedback counters and the prior each got (by ``feedback_target``).
    usage: dict[str, Usage] = field(default_factory=dict)
    priors: dict[str, float] = field(default_factory=dict)
    policy: PriorPolicy | None = None
    # The pack's cut (``prepare.cut``): each judged Memory hit's evidence estimate (by
    # ``feedback_target``) and the threshold used (0: off, or not a hybrid ranking).
    estimates: dict[str, float] = field(default_factory=dict)
    cut_threshold: float = 0.0
    # What each estimate was computed from (a ``cut.figures`` row), same keys.
    evidence_figures: dict[str, tuple[float, ...]] = field(default_factory=dict)

    @property
    def cut_label(self) -> str:
        """The cut line both renderers show: "Memory hits after the first with an evidence
        estimate below 0.042 left out"."""
        if self.cut_threshold <= 0:
            if self.search_mode != "hybrid":
                return f"off ({self.search_mode} ranking)"
            if self.floors is not None and self.floors.language != "en":
                return f"off (query language {self.floors.language})"
            return "off"
        return f"Memory hits after the first with an evidence estimate below {self.cut_threshold:g} left out"

    def estimate(self, trace: Decision) -> float | None:
        value = self.estimates.get(feedback_target(trace.hit)) if trace.source == "memory" else None
        return round(value, 4) if value is not None else None

    def figures(self, trace: Decision) -> dict[str, float] | None:
        """The figures the hit's estimate was computed from, by name (None: not judged)."""
        found = self.evidence_figures.get(feedback_target(trace.hit)) if trace.source == "memory" else None
        if found is None:
            return None
        return {name: round(value, 4) for name, value in zip(pack_cut.FIGURES, found, strict=True)}

    @property
    def feedback_label(self) -> str:
        """The feedback line both renderers show: "use prior within ±0.10; Memory held out at 2
        reporters of wrong or outdated"."""
        if self.policy is None:
            return "-"
        prior = f"use prior within \u00b1{self.policy.cap:.2f}" if self.policy.cap > 0 else "use prior off"
        held = (
            f"Memory held out at {self.policy.hold_reporters} reporters of wrong or outdated"
            if self.policy.hold_reporters > 0
            else "never held out"
        )
        return f"{prior}; {held}"

    def feedback(self, trace: Decision) -> dict[str, Any] | None:
        """The candidate's feedback figures for the JSON form, None when nobody reported it."""
        target = feedback_target(trace.hit)
        usage = self.usage.get(target)
        if usage is None:
            return None
        return {
            "uses": usage.uses,
            "last_used_at": _when(usage.last_used_at),
            "reporters": usage.reporters,
            "wrong_reporters": usage.wrong_reporters,
            "outdated_reporters": usage.outdated_reporters,
            "last_reported_at": _when(usage.last_reported_at),
            "prior": round(self.priors.get(target, 0.0), 4),
        }

    @property
    def floor_label(self) -> str:
        """The floor line both renderers show: "similarity 0.38 (0.60 for candidates not in
        English), or lexical share 0.30 with similarity 0.20 (query language fr)"."""
        if self.floors is None:
            return "-"
        base, strict = self.floors.base, self.floors.strict
        language = f"(query language {self.floors.language})"
        if base.off:
            return f"off {language}"
        other = f" ({strict.min_similarity:.2f} for candidates not in English)" if strict else ""
        return (
            f"similarity {base.min_similarity:.2f}{other}, or lexical share "
            f"{base.min_lexical_share:.2f} with similarity {base.min_lexical_similarity:.2f} {language}"
        )

    def floor_dict(self) -> dict[str, Any] | None:
        if self.floors is None:
            return None
        strict = self.floors.strict
        return {
            "language": self.floors.language,
            **asdict(self.floors.base),
            "min_similarity_other_languages": strict.min_similarity if strict is not None else None,
        }

    @property
    def head(self) -> str:
        ref = self.explanation.memory_ref
        return f"{ref.artifact_id}@{ref.revision}" if ref is not None else "none (no Memory hit)"

    @property
    def vector_cache_label(self) -> str | None:
        """The cache line both renderers show: "vector cache 14.7 of 256 MiB, 1 scope"."""
        if self.vector_cache is None:
            return None
        used = self.vector_cache["bytes"] / vector_cache.MIB
        bound = self.vector_cache["bound_bytes"] / vector_cache.MIB
        scopes = self.vector_cache["scopes"]
        label = f"vector cache {used:.1f} of {bound:g} MiB, {scopes} scope{'' if scopes == 1 else 's'}"
        ranking = self.vector_ranking
        if ranking is not None:
            rows = f"{ranking['rows']:,} Memory vectors"
            if ranking["shortlist"] is None:
                label += f"; {rows} ranked exactly"
            else:
                label += f"; {rows} ranked over a shortlist of at least {ranking['shortlist']:,}"
        return label

    @property
    def budget_percent(self) -> int:
        return self.explanation.prepared.content_bytes * 100 // self.explanation.max_bytes

    def preview(self, trace: Decision) -> str | None:
        return _preview(source_text(trace)) if self.show_text else None

    def rows(self) -> list[ExplainRow]:
        rows = []
        for trace in self.explanation.candidates:
            shown = candidate_dict(trace)
            rows.append(
                ExplainRow(
                    source=trace.source,
                    rank=str(trace.rank),
                    attempt=str(trace.attempt or "-"),
                    citation=citation_label(trace),
                    score=f"{shown['score']:.4f}" if shown["score"] is not None else "-",
                    matched_by="+".join(shown["matched_by"]) if shown["matched_by"] else "-",
                    similarity=_figure(shown["similarity"]),
                    lexical_share=_figure(shown["lexical_share"]),
                    chars=str(shown["source_chars"]),
                    decision=trace.decision,
                    outcome=outcome(trace),
                    preview=self.preview(trace),
                    estimate=_figure(self.estimate(trace), 3),
                    **self._feedback_cells(trace),
                )
            )
        return rows

    def _feedback_cells(self, trace: Decision) -> dict[str, str]:
        figures = self.feedback(trace)
        if figures is None:
            return {}
        last = f", last {figures['last_used_at'][:10]}" if figures["last_used_at"] else ""
        reports = [f"{kind} {figures[kind + '_reporters']}" for kind in ("wrong", "outdated")]
        return {
            "uses": f"{figures['uses']}{last}",
            "reports": ", ".join(r for r in reports if not r.endswith(" 0")) or "-",
            "prior": f"{figures['prior']:+.3f}",
        }

    def as_dict(self) -> dict[str, Any]:
        body = {
            "scope_id": self.scope_id,
            "search_mode": self.search_mode,
            "vector_cache": self.vector_cache,
            "vector_ranking": self.vector_ranking,
            "relevance_floor": self.floor_dict(),
            "feedback_policy": asdict(self.policy) if self.policy is not None else None,
            "pack_cut": self.cut_threshold,
            **self.explanation.as_dict(),
        }
        for row, trace in zip(body["candidates"], self.explanation.candidates, strict=True):
            row["feedback"] = self.feedback(trace)
            row["evidence_estimate"] = self.estimate(trace)
            row["evidence_figures"] = self.figures(trace)
            if self.show_text:
                row["text_preview"] = self.preview(trace)
        return body


def _when(seconds: float | None) -> str | None:
    return datetime.fromtimestamp(seconds, UTC).isoformat() if seconds is not None else None


def _preview(text: str) -> str:
    return text[:PREVIEW_CHARS] + ("\u2026" if len(text) > PREVIEW_CHARS else "")


def prepare_explain(*, scope_id: str, query: str, max_bytes: int, show_text: bool = False) -> ExplainReport:
    """What a prepare of ``query`` in ``scope_id`` would produce now, candidate by candidate.

    The caller validates its input (non-blank scope and query, ``max_bytes`` within the
    contract's range); raises ``BuilderInvariantError`` when the builder's invariants fail.
    """
    mode = search.best_mode(query)
    found = context_candidates(
        scope_id=scope_id,
        query=query,
        memory_limit=MEMORY_CANDIDATE_WINDOW,
        experience_limit=EXPERIENCE_CANDIDATE_WINDOW,
    )
    built = PreparedContextBuilder().build(
        memory_ref=found.memory_ref,
        memory_hits=found.memory_hits,
        experience_hits=found.experience_hits,
        max_bytes=max_bytes,
    )
    explained = explain(built, memory_ref=found.memory_ref, max_bytes=max_bytes, dropped=found.dropped)
    cache = vector_cache.cache_stats() if mode in {"vector", "hybrid"} else None
    ranking = vector_inprocess.memory_ranking(scope_id) if cache is not None else None
    return ExplainReport(
        scope_id=scope_id,
        search_mode=mode,
        explanation=explained,
        show_text=show_text,
        vector_cache=cache,
        vector_ranking=ranking,
        floors=relevance.query_floor(query),
        usage=feedback_selectors.counters_for(
            scope_id, [feedback_target(c.hit) for c in explained.candidates]
        ),
        priors=found.priors,
        policy=feedback_selectors.policy(),
        estimates=found.estimates,
        cut_threshold=found.cut_threshold,
        evidence_figures=found.evidence_figures,
    )
