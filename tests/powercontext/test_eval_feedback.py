"""``manage.py eval_retrieval --feedback``: the replay's protocol, on a tiny LoCoMo-shaped
conversation made here (never real data)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings
from django.utils import timezone

from powercontext.core.models import MemoryEntryVersion
from powercontext.evaluation import feedback_eval, retrieval_eval
from powercontext.feedback.models import Feedback
from powercontext.feedback.services import FeedbackItem, feedback_record
from powercontext.prepare import selection
from tests.feedback.helpers import citations_of

TURNS = [
    ("D1:1", "Ann", "I started pottery classes downtown on Mondays."),
    ("D1:2", "Bob", "My pottery wheel broke, so no pottery for me this month."),
    ("D1:3", "Ann", "We adopted a greyhound called Pixel."),
    ("D1:4", "Bob", "Pixel the greyhound loves running on the beach."),
    ("D1:5", "Ann", "I went kayaking on the lake at dawn."),
    ("D1:6", "Bob", "The lake was too cold for kayaking."),
]
# (question, category, evidence): twelve, so the tenth pack gets a wrong report and the later
# half is questions 7-12.
QUESTIONS = [
    ("Where are the pottery classes?", 4, "D1:1"),
    ("What is the greyhound called?", 1, "D1:3"),
    ("Where did Ann go kayaking?", 2, "D1:5"),
    ("Where are the pottery classes held?", 4, "D1:1"),
    ("Where does Pixel the greyhound run?", 3, "D1:4"),
    ("When did Ann go kayaking on the lake?", 2, "D1:5"),
    ("Which day are the pottery classes?", 4, "D1:1"),
    ("What broke, the pottery wheel?", 1, "D1:2"),
    ("Is the lake cold for kayaking?", 3, "D1:6"),
    ("The pottery classes, or the pottery wheel?", 4, "D1:1"),
    ("The greyhound Pixel?", 2, "D1:3"),
    ("Kayaking at dawn?", 4, "D1:5"),
]
CAPS = [0.0, 0.1]


def sample(sample_id: str = "conv-f") -> dict[str, Any]:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1": [{"dia_id": d, "speaker": s, "text": t} for d, s, t in TURNS],
        },
        "qa": [{"question": q, "answer": "x", "evidence": [e], "category": c} for q, c, e in QUESTIONS],
    }


def run_replay(tmp_path: Path, *args: str) -> dict[str, Any]:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample()]), encoding="utf-8")
    out = tmp_path / "out.json"
    call_command("eval_retrieval", "--locomo", str(path), "--json", str(out), "--run-id", "fb", *args)
    return dict(json.loads(out.read_text(encoding="utf-8")))


def entry_of_turn(scope_id: str) -> dict[str, str]:
    """turn id -> entry id in ``scope_id`` (the turns' texts are distinct)."""
    by_text = {f"{s}: {t}": d for d, s, t in TURNS}
    return {
        by_text[text]: entry_id
        for text, entry_id in MemoryEntryVersion.objects.filter(scope_id=scope_id).values_list(
            "text", "entry__entry_id"
        )
    }


@pytest.mark.django_db
def test_it_replays_every_cap_in_fresh_scopes_and_reports_used_only_for_evidence(
    tmp_path: Path, capsys: Any
) -> None:
    summary = run_replay(tmp_path, "--feedback-caps", "0.1", "--feedback-order", "file")

    end = datetime.fromisoformat(summary["simulated_days_end"])
    assert [replay["cap"] for replay in summary["replays"]] == CAPS
    scopes = [f"eval-feedback-fb-{n}-conv-f" for n in range(len(CAPS))]
    for scope_id, replay in zip(scopes, summary["replays"], strict=True):
        assert replay["packs"] == len(QUESTIONS)
        turns = {entry: turn for turn, entry in entry_of_turn(scope_id).items()}
        rows = list(Feedback.objects.filter(scope_id=scope_id).select_related("entry_version__entry"))
        used = [row for row in rows if row.outcome == "used"]
        assert used and len(used) == replay["used_reports"]
        for row in used:
            # Question i is asked on day end - (n - 1 - i): the last one "now".
            index = len(QUESTIONS) - 1 - round((end - row.created_at) / timedelta(days=1))
            assert turns[row.entry_version.entry.entry_id] == QUESTIONS[index][2]
            assert row.reporter == "local" and row.day == row.created_at.date()
        # One wrong report, in the tenth pack, about an item that is not its evidence.
        wrong = [row for row in rows if row.outcome == "wrong"]
        assert len(wrong) == replay["wrong_reports"] == 1
        for row in wrong:
            assert row.created_at == end - timedelta(days=len(QUESTIONS) - 10)
            assert turns[row.entry_version.entry.entry_id] != QUESTIONS[9][2]
    assert max(replay["used_reports"] for replay in summary["replays"]) > 0
    assert "Δ recall" in capsys.readouterr().out


@pytest.mark.django_db
def test_it_scores_the_later_half_of_each_conversation_per_category(tmp_path: Path) -> None:
    summary = run_replay(tmp_path, "--feedback")

    asked = feedback_eval.interleave(retrieval_eval.parse_conversations([sample()])[0].questions)
    later = [(q.question, q.category) for q in asked[len(asked) // 2 :]]
    assert (summary["questions"], summary["later_half_questions"], summary["order"]) == (12, 6, "interleaved")
    for replay in summary["replays"]:
        by_category = replay["later_half"]["by_category"]
        assert replay["later_half"]["overall"]["questions"] == len(later)
        for category, name in retrieval_eval.CATEGORIES.items():
            assert by_category[f"{category} {name}"]["questions"] == sum(1 for q in later if q[1] == category)
    # Only a cap below the prior-off figures is a loss; the baseline is never compared.
    assert set(summary["losses"]) == {"0.1"}


def test_interleaving_spreads_the_categories_and_keeps_each_ones_file_order() -> None:
    questions = [
        retrieval_eval.Question(f"q{n}", category, ("D1:1",))
        for n, category in enumerate([1, 1, 2, 4, 4, 4, 4])
    ]

    asked = feedback_eval.interleave(questions)

    assert [q.question for q in asked] == ["q3", "q0", "q4", "q2", "q5", "q1", "q6"]
    assert [q.category for q in asked[len(asked) // 2 :]] == [2, 4, 1, 4]


def test_the_careful_agent_reports_evidence_used_and_the_lowest_ranked_other_item_every_tenth_pack() -> None:
    cited = [{"entry_id": name} for name in ("e1", "x1", "e2", "x2")]

    assert feedback_eval.pack_feedback(cited, {"e1", "e2"}, 9) == feedback_eval.PackFeedback(
        used=(cited[0], cited[2]), wrong=None
    )
    assert feedback_eval.pack_feedback(cited, {"e1", "e2"}, 20).wrong == cited[3]
    assert feedback_eval.pack_feedback(cited[:1], {"e1"}, 10) == feedback_eval.PackFeedback((cited[0],), None)
    assert feedback_eval.pack_feedback([], set(), 10) == feedback_eval.PackFeedback((), None)
    assert feedback_eval.pack_feedback(cited, {"e1"}, 10, wrong_every=0).wrong is None
    assert feedback_eval.pack_feedback(cited, {"e1"}, 3, wrong_every=3).wrong == cited[3]


def test_caps_always_start_with_the_prior_off() -> None:
    assert feedback_eval.parse_caps("0.1, 0.05,0,0.1") == [0.0, 0.1, 0.05]
    with pytest.raises(ValueError, match="fraction"):
        feedback_eval.parse_caps("1.5")


@pytest.mark.django_db
def test_negatives_do_not_combine_with_the_replay(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="--negatives"):
        run_replay(tmp_path, "--feedback", "--negatives")


@pytest.mark.django_db
def test_the_prior_reads_the_day_it_is_given(api: Any) -> None:
    api.remember("clock", "The staging database listens on port 6543.")
    query = "which port does the staging database listen on?"
    response = api.post("/v1/context/prepare", {"scope_id": "clock", "query": query})
    (citation,) = citations_of(response.json())
    used_at = timezone.now() - timedelta(days=90)
    with override_settings(POWERCONTEXT_FEEDBACK_RATE_PER_MINUTE=0):
        for day in range(8):  # saturation: the prior is the cap when the last use is fresh
            feedback_record(
                scope_id="clock",
                items=[FeedbackItem(citation, "used")],
                token=None,
                now=used_at - timedelta(days=7 - day),
            )

    def prior_at(at: datetime) -> float:
        found = selection.context_candidates(
            scope_id="clock", query=query, memory_limit=8, experience_limit=2, now=at
        )
        return found.priors[f"m:{citation['entry_version_id']}"]

    assert prior_at(used_at) == pytest.approx(0.10)
    assert prior_at(used_at + timedelta(days=30)) == pytest.approx(0.05)
    assert 0 < prior_at(timezone.now()) < 0.02  # 90 days after the last use
