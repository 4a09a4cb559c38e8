"""Retrieval evaluation on LoCoMo-shaped conversations (used by ``manage.py eval_retrieval``).

Protocol (the retrieval issue): one fresh scope per conversation; every dialogue turn of every
session, in order, is remembered verbatim as one Memory entry of kind ``conversation`` with text
``"<speaker>: <text>"``; every question of category 1-4 whose evidence names at least one turn
is asked as a prepare query (``max_bytes`` 8000), once the embedder has caught up with the
conversation (``search.vectors.pending.wait_until_embedded``; with ``POWERCONTEXT_EMBED_WRITES=async``
vectors are written after commit). A question's evidence recall is the fraction of
its evidence turns whose entries the pack's Memory items cite; its hit is whether any is.

Precision: a pack's Memory items are counted; item precision is the share of them that cite an
evidence turn, overall and per category, next to the mean items and bytes per pack.

Negative and related sets (``--negatives``, ``note_sets``): prompts unrelated to the memory
they are asked against (the correct answer is ``empty``), and questions in other languages than
English that one engineering note answers; the report gives their empty and found rates.

Everything goes through the real services and the prepare application, in process. Scope ids
are fresh per run (``eval-locomo-<run>-<sample>``), so existing data is never read or changed;
use a throwaway database all the same, since the evaluation's rows stay.
"""

from __future__ import annotations

import re
import statistics
import time
import unicodedata
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from powercontext.core.models import MemoryMembership
from powercontext.evaluation import note_sets
from powercontext.evaluation.bench.common import percentile
from powercontext.evaluation.note_sets import (  # noqa: F401 (re-exported: tests and tools read them here)
    NEGATIVE_SETS,
    NegativeScore,
    PackTotals,
    RelatedScore,
    memory_item_entry_ids,
    read_lines,
)
from powercontext.memory.services import memory_remember
from powercontext.prepare.application import PrepareRequest, ScopedContextApplication
from powercontext.search.vectors import embedding, pending

KIND = "conversation"
MAX_BYTES = 8000
EMBED_TIMEOUT = 3600.0
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
MEMORY_TEXT_MAX_BYTES = 8192
_TURN_ID = re.compile(r"D\d+:\d+")
_SESSION = re.compile(r"session_(\d+)")


@dataclass(frozen=True)
class Turn:
    """One dialogue turn: its LoCoMo id (``D<session>:<turn>``) and the text remembered for it,
    ``"<speaker>: <text>"``."""

    dia_id: str
    text: str


@dataclass(frozen=True)
class Question:
    """One question asked as a prepare query, with its LoCoMo category and the turns that hold
    its answer (the evidence the pack should cite)."""

    question: str
    category: int
    evidence: tuple[str, ...]  # turn ids that name a turn of the conversation, deduplicated


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    skipped_questions: int  # category 1-4 whose evidence names no turn


@dataclass
class Score(PackTotals):
    """Running totals of the questions of one category (or all): recall, hits and the packs'
    items (``evidence_items``: those citing an evidence turn); ``as_dict`` gives the rates."""

    recall: float = 0.0
    hits: int = 0
    evidence_items: int = 0

    def add(self, recall: float, items: int = 0, evidence_items: int = 0, content_bytes: int = 0) -> None:
        self.recall += recall
        self.hits += recall > 0
        self.evidence_items += evidence_items
        self.add_pack(items, content_bytes)

    def as_dict(self) -> dict[str, Any]:
        return {
            "questions": self.packs,
            "evidence_recall": self.rate(self.recall),
            "hit_rate": self.rate(self.hits),
            "item_precision": round(self.evidence_items / self.items, 4) if self.items else 0.0,
            **self.pack_means(),
        }


@dataclass
class Report:
    overall: Score = field(default_factory=Score)
    by_category: dict[int, Score] = field(default_factory=lambda: {c: Score() for c in CATEGORIES})
    content_bytes: list[int] = field(default_factory=list)
    prepare_ms: list[float] = field(default_factory=list)
    conversations: int = 0
    turns: int = 0
    skipped_questions: int = 0
    seed_seconds: float = 0.0  # remembering the turns (the embedder may run meanwhile)
    embed_wait_seconds: float = 0.0  # after the last remember, until every turn had its vector
    negatives: dict[str, NegativeScore] = field(default_factory=dict)  # "<set> @ <target>"
    related: dict[str, RelatedScore] = field(default_factory=dict)  # "<set> @ <target>"

    def as_dict(self) -> dict[str, Any]:
        ms = self.prepare_ms or [0.0]
        return {
            "conversations": self.conversations,
            "turns": self.turns,
            "skipped_questions": self.skipped_questions,
            "overall": self.overall.as_dict(),
            "by_category": {f"{c} {name}": self.by_category[c].as_dict() for c, name in CATEGORIES.items()},
            "negatives": {name: score.as_dict() for name, score in self.negatives.items()},
            "related": {name: score.as_dict() for name, score in self.related.items()},
            "mean_content_bytes": round(statistics.fmean(self.content_bytes), 1) if self.content_bytes else 0,
            "prepare_p50_ms": round(statistics.median(ms), 3),
            "prepare_p95_ms": round(percentile(ms, 0.95), 3),
            "seed_seconds": round(self.seed_seconds, 2),
            "embed_wait_seconds": round(self.embed_wait_seconds, 2),
        }


def _session_number(key: str) -> int | None:
    match = _SESSION.fullmatch(key)
    return int(match.group(1)) if match else None


def parse_conversations(data: Any) -> list[Conversation]:
    """LoCoMo samples -> conversations (turns in session order, scoreable questions)."""
    if not isinstance(data, list):
        raise ValueError("expected a list of LoCoMo samples")
    conversations = []
    for n, sample in enumerate(data):
        dialogue = sample["conversation"]
        sessions = sorted(
            (number, turns)
            for key, turns in dialogue.items()
            if (number := _session_number(key)) is not None and isinstance(turns, list)
        )
        turns = tuple(
            Turn(dia_id=str(turn["dia_id"]), text=f"{turn['speaker']}: {turn['text']}")
            for _, session in sessions
            for turn in session
        )
        known = {turn.dia_id for turn in turns}
        questions = []
        skipped = 0
        for qa in sample.get("qa", []):
            if qa.get("category") not in CATEGORIES:
                continue
            named = [
                turn_id for evidence in qa.get("evidence", []) for turn_id in _TURN_ID.findall(str(evidence))
            ]
            evidence = tuple(dict.fromkeys(turn_id for turn_id in named if turn_id in known))
            if not evidence:
                skipped += 1
                continue
            questions.append(Question(str(qa["question"]), int(qa["category"]), evidence))
        conversations.append(Conversation(str(sample.get("sample_id", n)), turns, tuple(questions), skipped))
    return conversations


def cited_entry_ids(content: str | None) -> set[str]:
    """Entry ids cited by the Memory items of a prepared context's ``content``."""
    return set(memory_item_entry_ids(content))


def memory_text(text: str) -> str | None:
    """``text`` as Memory would keep it (NFC, stripped), or None when empty or too long."""
    text = unicodedata.normalize("NFC", text).strip()
    if not text or len(text.encode("utf-8")) > MEMORY_TEXT_MAX_BYTES:
        return None
    return text


def remember_conversation(scope_id: str, turns: Iterable[Turn]) -> dict[str, str]:
    """Remember every turn in order; return turn id -> entry id (identical turns share one)."""
    entries: dict[str, str] = {}
    by_text: dict[str, str] = {}
    for turn in turns:
        text = memory_text(turn.text)
        if text is None:
            continue
        mutation = memory_remember(scope_id=scope_id, kind=KIND, text=text)
        # Remembering what the head already holds is a no-op: the turn is the earlier entry
        # (of this run, or of an earlier run with the same run id: its scope is reused).
        if mutation.entry is not None:
            by_text[text] = mutation.entry.entry_id
        elif text not in by_text:
            by_text[text] = _active_entry_id(scope_id, text)
        entries[turn.dia_id] = by_text[text]
    return entries


def _active_entry_id(scope_id: str, text: str) -> str:
    return str(
        MemoryMembership.objects.filter(
            scope_id=scope_id,
            to_revision__isnull=True,
            state=MemoryMembership.State.ACTIVE,
            entry_version__text=text,
        )
        .order_by("pk")
        .values_list("entry__entry_id", flat=True)[0]
    )


def evidence_entries(question: Question, entries: dict[str, str]) -> set[str]:
    """The entry ids of the question's evidence turns (``entries``: turn id -> entry id)."""
    return {entries[turn_id] for turn_id in question.evidence if turn_id in entries}


def pack_figures(
    question: Question, entries: dict[str, str], items: list[str], content_bytes: int
) -> tuple[float, int, int, int]:
    """What one pack scores for ``question`` (``items``: its Memory items' entry ids, in order):
    evidence recall, Memory items, items citing an evidence turn, content bytes (``Score.add``)."""
    cited = set(items)
    evidence = evidence_entries(question, entries)
    found = sum(1 for turn_id in question.evidence if entries.get(turn_id) in cited)
    return (
        found / len(question.evidence),
        len(items),
        sum(1 for entry in items if entry in evidence),
        content_bytes,
    )


def wait_for_vectors(scope_id: str) -> None:
    if embedding.embedder() is not None and not pending.wait_until_embedded(scope_id, EMBED_TIMEOUT):
        raise RuntimeError("the embedder did not catch up within the timeout")


def evaluate(
    conversations: list[Conversation],
    *,
    run_id: str | None = None,
    progress: Callable[[str], None] | None = None,
    negatives: bool = False,
) -> Report:
    """Load each conversation into a fresh scope, ask its questions, score the packs; with
    ``negatives``, also ask the negative and related sets (``note_sets``)."""
    run = run_id or uuid.uuid4().hex[:12]
    application = ScopedContextApplication()
    report = Report()
    chat_scopes: list[str] = []
    for conversation in conversations:
        scope_id = f"eval-locomo-{run}-{conversation.sample_id}"
        chat_scopes.append(scope_id)
        started = time.perf_counter()
        entries = remember_conversation(scope_id, conversation.turns)
        seeded = time.perf_counter()
        # Measure the finished index: with embedding after commit, wait for the embedder.
        wait_for_vectors(scope_id)
        report.seed_seconds += seeded - started
        report.embed_wait_seconds += time.perf_counter() - seeded
        report.conversations += 1
        report.turns += len(entries)
        report.skipped_questions += conversation.skipped_questions
        for question in conversation.questions:
            started = time.perf_counter()
            prepared = application.prepare(
                PrepareRequest(scope_id=scope_id, query=question.question, max_bytes=MAX_BYTES)
            )
            report.prepare_ms.append((time.perf_counter() - started) * 1000)
            report.content_bytes.append(prepared.content_bytes)
            figures = pack_figures(
                question, entries, memory_item_entry_ids(prepared.content), prepared.content_bytes
            )
            report.overall.add(*figures)
            report.by_category[question.category].add(*figures)
        if progress:
            progress(
                f"{conversation.sample_id}: {len(entries)} turns, {len(conversation.questions)} questions"
            )
    if negatives:
        report.negatives, report.related = note_sets.evaluate_note_sets(
            application, run=run, chat_scopes=chat_scopes, caught_up=wait_for_vectors
        )
    return report


def render_table(summary: dict[str, Any]) -> str:
    rows = [("overall", summary["overall"]), *summary["by_category"].items()]
    lines = [
        f"{'questions':<16}{'n':>6}{'recall':>9}{'hit rate':>10}{'precision':>11}{'items':>7}{'bytes':>7}"
    ]
    for name, score in rows:
        lines.append(
            f"{name:<16}{score['questions']:>6}{score['evidence_recall']:>9.3f}{score['hit_rate']:>10.3f}"
            f"{score['item_precision']:>11.3f}{score['mean_items']:>7.2f}{score['mean_content_bytes']:>7.0f}"
        )
    # (summary key, heading, count field, rate field, rate heading) of the prompt-set tables
    for key, heading, count, rate, label in (
        ("negatives", "negative set", "prompts", "empty_rate", "empty"),
        ("related", "related set", "questions", "found_rate", "found"),
    ):
        if summary.get(key):
            lines.append(f"{heading:<40}{'n':>6}{label:>8}{'items':>7}{'bytes':>7}")
            for name, score in summary[key].items():
                lines.append(
                    f"{name:<40}{score[count]:>6}{score[rate]:>8.3f}{score['mean_items']:>7.2f}"
                    f"{score['mean_content_bytes']:>7.0f}"
                )
    lines.append(
        f"mean content_bytes {summary['mean_content_bytes']:.0f}; prepare p50 {summary['prepare_p50_ms']:.2f} ms,"
        f" p95 {summary['prepare_p95_ms']:.2f} ms; {summary['conversations']} conversations,"
        f" {summary['turns']} turns, {summary['skipped_questions']} questions without a known evidence turn;"
        f" seeding {summary['seed_seconds']:.1f} s, then {summary['embed_wait_seconds']:.1f} s until embedded"
    )
    return "\n".join(lines)
