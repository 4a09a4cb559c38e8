"""The feedback replay (issue 30; ``manage.py eval_retrieval --feedback``): does the use prior
help on the dev conversations, and by how much at each cap?

Protocol. For each conversation, one fresh scope per prior cap (``--feedback-caps``; by
default 0, the prior off, and the configured ``POWERCONTEXT_FEEDBACK_PRIOR_CAP``), every turn
remembered as ``retrieval_eval`` does; all of a conversation's scopes are seeded, and their
vectors awaited, before the first question, and each question is then asked in every scope in
turn, so that every replay sees the same full-text table (SQLite's FTS5 counts documents over
the whole table). The questions are asked in file order; after each prepare the replay
reports, as one careful agent would:

- ``used`` for every cited Memory item that is evidence of the question (an entry of one of
  its evidence turns), and nothing for the other items;
- ``wrong`` for one cited non-evidence item in every tenth pack (questions 10, 20, ... of the
  conversation; ``wrong_every``, 0 for none): the lowest-ranked one, i.e. the last Memory item
  of the pack that is not evidence (nothing when every item is evidence). No LoCoMo turn is
  false, so these reports are the noise a careless or mistaken agent adds.

Every report comes from one reporter (the tokenless ``local`` caller of the embedded default),
with the rate limit off (``POWERCONTEXT_FEEDBACK_RATE_PER_MINUTE`` 0). Feedback is recorded in
every scope, the prior-off one included; only the cap differs. The hold rule keeps its setting,
but one reporter never reaches two, so nothing is held: this measures the prior alone.

Order. LoCoMo files list a conversation's questions by category in blocks (categories 1-3
mixed, then every single-hop question), so in file order the later half would be almost all
single-hop (375 of the dev set's 381) and the per-category rows meaningless. By default
(``ORDER_INTERLEAVED``) the questions are therefore asked with the categories spread evenly over
the conversation, each category's questions in file order (``interleave``): the later half holds
the later half of every category. ``ORDER_FILE`` asks them as the file lists them.

Time is simulated: question ``i`` of a conversation of ``n`` questions is asked on day
``end - (n - 1 - i)`` days, ``end`` being the moment the replay started, so the last question
is asked "now" and each earlier one a day before the next. The reports are recorded at that
moment (``feedback_record(now=...)``) and the prior reads that same moment as its clock
(``PrepareRequest.now``), so a use made on question ``j`` is ``i - j`` days old when question
``i`` is prepared, as it would be in a real scope where one question is asked a day.

Scored: the later half of each conversation's questions (from question ``n // 2`` on, 0-based),
when earlier questions have left their feedback: recall, hit rate, item precision, mean items
and bytes, overall and per LoCoMo category, per cap. A cap *loses* when any of them (recall,
hit rate, item precision) falls below the prior-off figure in any category or overall.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.test import override_settings
from django.utils import timezone

from powercontext.evaluation import retrieval_eval
from powercontext.evaluation.note_sets import memory_item_citations
from powercontext.evaluation.retrieval_eval import CATEGORIES, MAX_BYTES, Conversation, Question, Score
from powercontext.feedback.models import Outcome
from powercontext.feedback.services import FeedbackItem, feedback_record
from powercontext.prepare.application import PrepareRequest, ScopedContextApplication

WRONG_EVERY = 10  # by default, a wrong report in every tenth pack
ORDER_INTERLEAVED, ORDER_FILE = "interleaved", "file"
ORDERS = (ORDER_INTERLEAVED, ORDER_FILE)
# Rates compared when deciding whether a cap loses against the prior off.
COMPARED = ("evidence_recall", "hit_rate", "item_precision")


def parse_caps(text: str) -> list[float]:
    """``"0,0.05,0.1"`` -> ``[0.0, 0.05, 0.1]``: the caps to replay, 0 (the prior off, the
    baseline every other cap is compared with) always first, duplicates dropped."""
    caps = []
    for part in text.split(","):
        if not part.strip():
            continue
        value = float(part)
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"a cap is a fraction from 0 to 1, got {part.strip()}")
        caps.append(value)
    return list(dict.fromkeys([0.0, *caps]))


def default_caps() -> list[float]:
    """The prior off and the configured cap."""
    return parse_caps(str(settings.POWERCONTEXT_FEEDBACK_PRIOR_CAP))


@dataclass
class CapReplay:
    """What the replays at one cap gave: the later half's scores and the feedback they sent."""

    cap: float
    overall: Score = field(default_factory=Score)
    by_category: dict[int, Score] = field(default_factory=lambda: {c: Score() for c in CATEGORIES})
    packs: int = 0  # every question asked (both halves)
    used_reports: int = 0
    wrong_reports: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "cap": self.cap,
            "later_half": {
                "overall": self.overall.as_dict(),
                "by_category": {
                    f"{c} {name}": self.by_category[c].as_dict() for c, name in CATEGORIES.items()
                },
            },
            "packs": self.packs,
            "used_reports": self.used_reports,
            "wrong_reports": self.wrong_reports,
        }


@dataclass
class FeedbackReport:
    replays: list[CapReplay]
    conversations: int = 0
    questions: int = 0
    later_questions: int = 0
    seed_seconds: float = 0.0
    replay_seconds: float = 0.0
    end: datetime | None = None
    order: str = ORDER_INTERLEAVED
    wrong_every: int = WRONG_EVERY

    def as_dict(self) -> dict[str, Any]:
        replays = [replay.as_dict() for replay in self.replays]
        return {
            "conversations": self.conversations,
            "questions": self.questions,
            "later_half_questions": self.later_questions,
            "order": self.order,
            "wrong_every": self.wrong_every,
            "simulated_days_end": self.end.isoformat() if self.end else None,
            "replays": replays,
            "losses": {str(replay["cap"]): losses(replays[0], replay) for replay in replays[1:]},
            "seed_seconds": round(self.seed_seconds, 1),
            "replay_seconds": round(self.replay_seconds, 1),
        }


def losses(off: dict[str, Any], on: dict[str, Any]) -> list[str]:
    """Where ``on`` scores below ``off`` on the later half: ``"<row> <rate> -<drop>"``."""
    out: list[str] = []
    for name in _rows(off):
        before, after = _row(off, name), _row(on, name)
        out.extend(
            f"{name} {rate} -{before[rate] - after[rate]:.4f}"
            for rate in COMPARED
            if after[rate] < before[rate]
        )
    return out


def _rows(replay_: dict[str, Any]) -> list[str]:
    return ["overall", *replay_["later_half"]["by_category"]]


def _row(replay_: dict[str, Any], name: str) -> dict[str, Any]:
    later = replay_["later_half"]
    return dict(later["overall"] if name == "overall" else later["by_category"][name])


def interleave(questions: Sequence[Question]) -> list[Question]:
    """``questions`` with their categories spread evenly: the ``k``-th of a category's ``m``
    questions (file order) is asked at the relative position ``(k + 0.5) / m``, ties in file
    order."""
    count: dict[int, int] = {}
    for question in questions:
        count[question.category] = count.get(question.category, 0) + 1
    seen: dict[int, int] = {}
    keys = []
    for position, question in enumerate(questions):
        k = seen.get(question.category, 0)
        seen[question.category] = k + 1
        keys.append(((k + 0.5) / count[question.category], position))
    return [questions[position] for _, position in sorted(keys)]


@dataclass(frozen=True)
class PackFeedback:
    """The feedback one pack gets: the citations reported ``used`` and the one reported ``wrong``."""

    used: tuple[dict[str, Any], ...]
    wrong: dict[str, Any] | None


def pack_feedback(
    citations: Sequence[dict[str, Any]], evidence: set[str], number: int, wrong_every: int = WRONG_EVERY
) -> PackFeedback:
    """What the careful agent reports for pack ``number`` (1-based within its conversation):
    ``used`` for the cited evidence, and in every ``wrong_every``-th pack (0: never) ``wrong``
    for the lowest-ranked cited item that is not evidence."""
    used = tuple(c for c in citations if c["entry_id"] in evidence)
    wrong = None
    if wrong_every > 0 and number % wrong_every == 0:
        others = [c for c in citations if c["entry_id"] not in evidence]
        wrong = others[-1] if others else None
    return PackFeedback(used, wrong)


def replay(
    conversations: list[Conversation],
    *,
    caps: Sequence[float],
    order: str = ORDER_INTERLEAVED,
    wrong_every: int = WRONG_EVERY,
    run_id: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> FeedbackReport:
    """Replay every conversation once per cap (``caps[0]`` is the baseline: 0), its questions in
    ``order`` (``ORDERS``); see the module docstring for the protocol."""
    if order not in ORDERS:
        raise ValueError(f"order is one of {', '.join(ORDERS)}")
    run = run_id or uuid.uuid4().hex[:12]
    application = ScopedContextApplication()
    end = timezone.now()
    report = FeedbackReport(
        replays=[CapReplay(cap) for cap in caps], end=end, order=order, wrong_every=wrong_every
    )
    with override_settings(POWERCONTEXT_FEEDBACK_RATE_PER_MINUTE=0):
        for conversation in conversations:
            started = time.perf_counter()
            scopes = [f"eval-feedback-{run}-{n}-{conversation.sample_id}" for n in range(len(caps))]
            entries = [retrieval_eval.remember_conversation(scope, conversation.turns) for scope in scopes]
            for scope in scopes:
                retrieval_eval.wait_for_vectors(scope)
            seeded = time.perf_counter()
            report.seed_seconds += seeded - started
            questions = (
                interleave(conversation.questions) if order == ORDER_INTERLEAVED else conversation.questions
            )
            _replay_conversation(application, questions, scopes, entries, report.replays, end, wrong_every)
            report.replay_seconds += time.perf_counter() - seeded
            report.conversations += 1
            report.questions += len(conversation.questions)
            report.later_questions += len(conversation.questions) - len(conversation.questions) // 2
            if progress:
                progress(
                    f"{conversation.sample_id}: {len(conversation.questions)} questions"
                    f" x {len(caps)} caps, {time.perf_counter() - started:.1f} s"
                )
    return report


def _replay_conversation(
    application: ScopedContextApplication,
    questions: Sequence[Question],
    scopes: list[str],
    entries: list[dict[str, str]],
    replays: list[CapReplay],
    end: datetime,
    wrong_every: int,
) -> None:
    count = len(questions)
    later_from = count // 2
    for index, question in enumerate(questions):
        day = end - timedelta(days=count - 1 - index)
        for scope_id, turn_entries, cap_replay in zip(scopes, entries, replays, strict=True):
            with override_settings(POWERCONTEXT_FEEDBACK_PRIOR_CAP=cap_replay.cap):
                prepared = application.prepare(
                    PrepareRequest(scope_id=scope_id, query=question.question, max_bytes=MAX_BYTES, now=day)
                )
            cap_replay.packs += 1
            citations = memory_item_citations(prepared.content)
            evidence = retrieval_eval.evidence_entries(question, turn_entries)
            sent = pack_feedback(citations, evidence, index + 1, wrong_every)
            items = [FeedbackItem(citation=c, outcome=Outcome.USED) for c in sent.used]
            if sent.wrong is not None:
                items.append(FeedbackItem(citation=sent.wrong, outcome=Outcome.WRONG))
            if items:
                feedback_record(scope_id=scope_id, items=items, token=None, now=day)
            cap_replay.used_reports += len(sent.used)
            cap_replay.wrong_reports += sent.wrong is not None
            if index >= later_from:
                figures = retrieval_eval.pack_figures(
                    question,
                    turn_entries,
                    [c["entry_id"] for c in citations],
                    prepared.content_bytes,
                )
                cap_replay.overall.add(*figures)
                cap_replay.by_category[question.category].add(*figures)


def render_table(summary: dict[str, Any]) -> str:
    """The later half per row (overall, then each category) and cap, with the change in recall,
    hit rate and precision against the prior off; then the feedback sent and the verdicts."""
    replays = summary["replays"]
    lines = [
        f"later half of each conversation: {summary['later_half_questions']} of {summary['questions']}"
        f" questions ({summary['order']} order, wrong every {summary['wrong_every']} packs);"
        " prior cap 0 = off",
        f"{'questions':<16}{'cap':>6}{'n':>6}{'recall':>9}{'hit rate':>10}{'precision':>11}"
        f"{'items':>7}{'bytes':>7}{'Δ recall':>10}{'Δ hit':>8}{'Δ prec.':>9}",
    ]
    for name in _rows(replays[0]):
        base = _row(replays[0], name)
        for replay_ in replays:
            score = _row(replay_, name)
            deltas = ""
            if replay_ is not replays[0]:
                deltas = (
                    f"{score['evidence_recall'] - base['evidence_recall']:>+10.3f}"
                    f"{score['hit_rate'] - base['hit_rate']:>+8.3f}"
                    f"{score['item_precision'] - base['item_precision']:>+9.3f}"
                )
            lines.append(
                f"{name if replay_ is replays[0] else '':<16}{replay_['cap']:>6.2f}{score['questions']:>6}"
                f"{score['evidence_recall']:>9.3f}{score['hit_rate']:>10.3f}{score['item_precision']:>11.3f}"
                f"{score['mean_items']:>7.2f}{score['mean_content_bytes']:>7.0f}{deltas}"
            )
    for replay_ in replays:
        lost = summary["losses"].get(str(replay_["cap"]))
        verdict = "" if replay_ is replays[0] else ("; loses: " + ", ".join(lost) if lost else "; no loss")
        lines.append(
            f"cap {replay_['cap']:.2f}: {replay_['packs']} packs, {replay_['used_reports']} used and"
            f" {replay_['wrong_reports']} wrong reports{verdict}"
        )
    lines.append(
        f"{summary['conversations']} conversations; seeding {summary['seed_seconds']:.1f} s,"
        f" replay {summary['replay_seconds']:.1f} s"
    )
    return "\n".join(lines)
