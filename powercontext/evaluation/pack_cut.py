"""Calibrating the pack's cut (``manage.py eval_retrieval --pack-cut``): the evidence model of
``powercontext.prepare.cut`` fitted on LoCoMo-shaped conversations, and the frontier it gives.

Protocol (the retrieval evaluation's, ``retrieval_eval``): each conversation remembered into a
fresh scope, every scoreable question asked. Here each question is asked of selection itself
(``context_candidates``) with the cut off, so that every hit selection keeps (relevance floor,
feedback hold and prior, near-identical collapse applied) is recorded with its cut figures
(``cut.figures``) and whether it cites an evidence turn.

Then, leave one conversation out: for each conversation, a logistic model is fitted on the
others' hits (those within ``MEMORY_ITEM_LIMIT`` of the top, the positions a pack can hold) and
applied to its own, for every threshold asked; the packs that result (the first hits the cut
keeps, at most ``MEMORY_ITEM_LIMIT``, built by the real builder) are scored as the retrieval
evaluation scores packs. Last, one model is fitted on every conversation: the coefficients to
put in ``cut.EVIDENCE_MODEL``.

The fit is plain L2-regularised logistic regression by Newton's method (``fit``; the intercept
is not penalised), in numpy: no other dependency.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from django.test import override_settings

from powercontext.evaluation import retrieval_eval
from powercontext.evaluation.retrieval_eval import Conversation, Question, Score
from powercontext.prepare import cut
from powercontext.prepare.builder import (
    EXPERIENCE_CANDIDATE_WINDOW,
    MEMORY_CANDIDATE_WINDOW,
    MEMORY_ITEM_LIMIT,
    MemoryHit,
    PreparedContextBuilder,
)
from powercontext.prepare.selection import context_candidates, cut_figures
from powercontext.search.fulltext import analyzer

if TYPE_CHECKING:
    from powercontext.core.hits import ArtifactRef

DEFAULT_THRESHOLDS = (0.0, 0.02, 0.03, 0.035, 0.04, 0.042, 0.045, 0.05, 0.07)
L2 = 1.0  # the penalty's weight: 0.5 * L2 * |coefficients|^2
NEWTON_STEPS = 50


@dataclass(frozen=True)
class Asked:
    """One question asked of selection with the cut off: its hits and their figures."""

    conversation: str
    question: Question
    entries: dict[str, str]  # the conversation's turn id -> entry id
    memory_ref: ArtifactRef | None
    hits: tuple[MemoryHit, ...]
    rows: tuple[tuple[float, ...], ...]  # ``cut.figures`` of ``hits``
    evidence: tuple[bool, ...]  # per hit: it cites an evidence turn


@dataclass
class Frontier:
    """Per threshold, the packs' scores summed over every held-out conversation."""

    scores: dict[float, Score] = field(default_factory=dict)
    model: cut.EvidenceModel | None = None  # fitted on every conversation
    questions: int = 0
    hits: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            "hits": self.hits,
            "thresholds": {str(t): score.as_dict() for t, score in sorted(self.scores.items())},
            "model": None
            if self.model is None
            else {"intercept": self.model.intercept, **self.coefficients()},
            "seconds": round(self.seconds, 1),
        }

    def coefficients(self) -> dict[str, float]:
        assert self.model is not None
        return {name: getattr(self.model, name) for name in cut.FIGURES}


def fit(rows: Sequence[Sequence[float]], labels: Sequence[bool], l2: float = L2) -> cut.EvidenceModel:
    """The L2-regularised logistic model of ``labels`` given ``rows`` (Newton's method)."""
    x = np.hstack([np.ones((len(rows), 1)), np.asarray(rows, dtype=float)])
    y = np.asarray(labels, dtype=float)
    penalty = np.full(x.shape[1], l2)
    penalty[0] = 0.0  # the intercept is not penalised
    w = np.zeros(x.shape[1])
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -700, 700)))
        gradient = x.T @ (p - y) + penalty * w
        hessian = (x * (p * (1 - p))[:, None]).T @ x + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if float(np.max(np.abs(step))) < 1e-10:
            break
    names = ("intercept", *cut.FIGURES)
    return cut.EvidenceModel(**{name: round(float(value), 4) for name, value in zip(names, w, strict=True)})


def ask(
    conversations: list[Conversation],
    *,
    run_id: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[Asked]:
    """Remember each conversation into a fresh scope and ask selection every question, cut off."""
    run = run_id or uuid.uuid4().hex[:12]
    asked: list[Asked] = []
    with override_settings(POWERCONTEXT_PACK_CUT=0):
        for conversation in conversations:
            scope_id = f"eval-cut-{run}-{conversation.sample_id}"
            entries = retrieval_eval.remember_conversation(scope_id, conversation.turns)
            retrieval_eval.wait_for_vectors(scope_id)
            for question in conversation.questions:
                found = context_candidates(
                    scope_id=scope_id,
                    query=question.question,
                    memory_limit=MEMORY_CANDIDATE_WINDOW,
                    experience_limit=EXPERIENCE_CANDIDATE_WINDOW,
                )
                evidence = retrieval_eval.evidence_entries(question, entries)
                hits = tuple(found.memory_hits)
                words = set(analyzer.analyze(question.question))
                asked.append(
                    Asked(
                        conversation=conversation.sample_id,
                        question=question,
                        entries=entries,
                        memory_ref=found.memory_ref,
                        hits=hits,
                        rows=tuple(cut.figures([cut_figures(hit, words) for hit in hits])),
                        evidence=tuple(hit.entry_id in evidence for hit in hits),
                    )
                )
            if progress:
                progress(f"{conversation.sample_id}: {len(conversation.questions)} questions asked")
    return asked


def training(asked: Sequence[Asked]) -> tuple[list[tuple[float, ...]], list[bool]]:
    """The rows a model is fitted on: each question's hits within ``MEMORY_ITEM_LIMIT``."""
    rows: list[tuple[float, ...]] = []
    labels: list[bool] = []
    for one in asked:
        rows.extend(one.rows[:MEMORY_ITEM_LIMIT])
        labels.extend(one.evidence[:MEMORY_ITEM_LIMIT])
    return rows, labels


def score_pack(one: Asked, model: cut.EvidenceModel, threshold: float, into: Score) -> None:
    """Add to ``into`` the pack this question gets with ``model`` cutting at ``threshold``."""
    keep = cut.keeps([cut.estimate(row, model) for row in one.rows], threshold)
    hits = [hit for hit, kept in zip(one.hits, keep, strict=True) if kept][:MEMORY_ITEM_LIMIT]
    built = PreparedContextBuilder().build(
        memory_ref=one.memory_ref if hits else None, memory_hits=hits, experience_hits=[], max_bytes=8000
    )
    items = [hit.entry_id for hit in hits]
    into.add(*retrieval_eval.pack_figures(one.question, one.entries, items, built.context.content_bytes))


def frontier(asked: Sequence[Asked], thresholds: Sequence[float]) -> Frontier:
    """Leave one conversation out at every threshold, then the model of every conversation."""
    started = time.perf_counter()
    result = Frontier(scores={t: Score() for t in thresholds}, questions=len(asked))
    result.hits = sum(len(one.hits) for one in asked)
    for held_out in dict.fromkeys(one.conversation for one in asked):
        model = fit(*training([one for one in asked if one.conversation != held_out]))
        for one in asked:
            if one.conversation == held_out:
                for threshold in thresholds:
                    score_pack(one, model, threshold, result.scores[threshold])
    result.model = fit(*training(asked))
    result.seconds = time.perf_counter() - started
    return result


def parse_thresholds(text: str) -> tuple[float, ...]:
    values = sorted({float(part) for part in text.split(",") if part.strip()})
    if not values or any(not 0.0 <= value < 1.0 for value in values):
        raise ValueError("thresholds are numbers from 0 to below 1, comma-separated")
    return tuple(values)


def render_table(summary: dict[str, Any]) -> str:
    lines = [f"{'threshold':<11}{'recall':>9}{'hit rate':>10}{'precision':>11}{'items':>7}{'bytes':>7}"]
    for threshold, score in summary["thresholds"].items():
        lines.append(
            f"{threshold:<11}{score['evidence_recall']:>9.3f}{score['hit_rate']:>10.3f}"
            f"{score['item_precision']:>11.3f}{score['mean_items']:>7.2f}{score['mean_content_bytes']:>7.0f}"
        )
    model = summary["model"]
    if model is not None:
        lines.append("model fitted on every conversation (cut.EVIDENCE_MODEL):")
        lines.append(", ".join(f"{name}={value}" for name, value in model.items()))
    lines.append(
        f"{summary['questions']} questions, {summary['hits']} hits; leave-one-conversation-out in"
        f" {summary['seconds']:.1f} s"
    )
    return "\n".join(lines)
