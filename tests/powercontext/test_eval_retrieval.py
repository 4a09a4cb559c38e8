"""``manage.py eval_retrieval`` on a tiny LoCoMo-shaped conversation made here (never real data)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from powercontext.core.models import MemoryEntryVersion
from powercontext.evaluation import note_sets, retrieval_eval


def turn(dia_id: str, speaker: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"dia_id": dia_id, "speaker": speaker, "text": text, **extra}


def sample(sample_id: str = "conv-x") -> dict[str, Any]:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_2_date_time": "2 May 2023",
            # Sessions out of order in the file: loaded by session number.
            "session_2": [
                turn("D2:1", "Ann", "We adopted a greyhound called Pixel."),
                turn("D2:2", "Bob", "A greyhound! Lovely.", blip_caption="a dog", img_url=["x"]),
            ],
            "session_1_date_time": "1 May 2023",
            "session_1": [
                turn("D1:1", "Ann", "I started pottery classes downtown."),
                turn("D1:2", "Bob", "I went kayaking on the lake."),
                turn("D1:3", "Bob", "Thanks!"),
                turn("D1:4", "Bob", "Thanks!"),
            ],
        },
        "qa": [
            {"question": "What pottery classes?", "answer": "downtown", "evidence": ["D1:1"], "category": 4},
            # One of two evidence turns is findable: recall 0.5, a hit.
            {"question": "greyhound?", "answer": "Pixel", "evidence": ["D2:1; D1:2"], "category": 1},
            {"question": "zeppelin?", "answer": "none", "evidence": ["D1:2"], "category": 2},
            {"question": "kayaking lake?", "answer": "x", "evidence": ["D1:2"], "category": 5},
            {"question": "pottery?", "answer": "x", "evidence": ["D", "D9:9"], "category": 3},
            {"question": "Thanks", "answer": "x", "evidence": ["D1:4"], "category": 3},
        ],
        "session_summary": {"ignored": True},
    }


def test_it_parses_turns_in_session_order_and_only_scoreable_questions() -> None:
    (conversation,) = retrieval_eval.parse_conversations([sample()])

    assert [t.dia_id for t in conversation.turns] == ["D1:1", "D1:2", "D1:3", "D1:4", "D2:1", "D2:2"]
    assert conversation.turns[5].text == "Bob: A greyhound! Lovely."
    assert [(q.category, q.evidence) for q in conversation.questions] == [
        (4, ("D1:1",)),
        (1, ("D2:1", "D1:2")),
        (2, ("D1:2",)),
        (3, ("D1:4",)),
    ]
    assert conversation.skipped_questions == 1


@pytest.mark.django_db
def test_it_scores_evidence_recall_and_hits_of_prepare_packs(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample("a"), sample("b")]), encoding="utf-8")
    out = tmp_path / "out.json"

    call_command("eval_retrieval", "--locomo", str(path), "--json", str(out), "--run-id", "t1")

    summary = json.loads(out.read_text(encoding="utf-8"))
    assert (summary["conversations"], summary["turns"], summary["skipped_questions"]) == (2, 12, 2)
    by_category = summary["by_category"]
    recall = ("questions", "evidence_recall", "hit_rate")

    def scores(figures: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(figures[key] for key in recall)

    assert scores(by_category["4 single-hop"]) == (2, 1.0, 1.0)
    assert scores(by_category["1 multi-hop"]) == (2, 0.5, 1.0)
    assert scores(by_category["2 temporal"]) == (2, 0.0, 0.0)
    # Identical turns are one entry: citing it counts for either turn.
    assert scores(by_category["3 open-domain"]) == (2, 1.0, 1.0)
    assert scores(summary["overall"]) == (8, 0.625, 0.75)
    # Precision: the one Memory item of the single-hop packs is the evidence.
    assert by_category["4 single-hop"]["item_precision"] == 1.0
    assert by_category["4 single-hop"]["mean_items"] == 1.0
    assert summary["mean_content_bytes"] > 0 and summary["prepare_p95_ms"] >= summary["prepare_p50_ms"]
    # Verbatim turns, kind "conversation", in fresh scopes named after the run.
    texts = set(
        MemoryEntryVersion.objects.filter(scope_id="eval-locomo-t1-a", kind="conversation").values_list(
            "text", flat=True
        )
    )
    assert "Ann: I started pottery classes downtown." in texts and len(texts) == 5
    assert "overall" in capsys.readouterr().out


@pytest.mark.django_db
def test_with_negatives_it_asks_every_negative_and_related_set(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample("a")]), encoding="utf-8")
    out = tmp_path / "out.json"

    call_command("eval_retrieval", "--locomo", str(path), "--json", str(out), "--run-id", "t2", "--negatives")

    summary = json.loads(out.read_text(encoding="utf-8"))
    negatives, related = summary["negatives"], summary["related"]
    assert {f"everyday-{lang} @ engineering-{lang}" for lang in note_sets.LANGUAGES} <= set(negatives)
    assert set(related) == {f"related-{lang} @ engineering-{lang}" for lang in note_sets.LANGUAGES} | {
        "related-other-languages @ engineering"
    }
    assert "everyday-fr @ engineering" in negatives  # across languages too
    for name, (file_name, kind) in note_sets.RELATED_SETS.items():
        assert related[f"{name} @ {kind}"]["questions"] == len(note_sets.read_related(file_name))
    assert negatives["everyday-zh @ engineering-zh"]["empty_rate"] == 1.0
    assert related["related-zh @ engineering-zh"]["found_rate"] >= 0.5
    printed = capsys.readouterr().out
    assert "negative set" in printed and "related-fr @ engineering-fr" in printed


def test_a_related_line_names_its_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(note_sets, "DATA_DIR", tmp_path)
    (tmp_path / "good.txt").write_text("# comment\n2 Which broker?\n\n1 Which library?\n", encoding="utf-8")
    assert note_sets.read_related("good.txt") == [(1, "Which broker?"), (0, "Which library?")]
    for bad in ("Which broker?", "0 Which broker?", "3"):
        (tmp_path / "bad.txt").write_text(bad + "\n", encoding="utf-8")
        with pytest.raises(ValueError, match="note number"):
            note_sets.read_related("bad.txt")
