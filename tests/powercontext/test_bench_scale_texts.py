"""``manage.py bench_scale --locomo``: the catch-up benchmark's notes taken from a LoCoMo file's
turns (written through the service layer, every one embedded), and a clear error for a file it
cannot read."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from powercontext.core.models import MemoryEntryVector

TURNS = ["The boat leaves at nine.", "Bring the blue tent.", "The lake was cold."]


def _locomo(path: Path) -> Path:
    session = [
        {"speaker": speaker, "dia_id": f"D1:{n}", "text": text}
        for n, (speaker, text) in enumerate(zip(["Ann", "Bob", "Ann"], TURNS, strict=True), start=1)
    ]
    path.write_text(json.dumps([{"sample_id": "x", "conversation": {"session_1": session}, "qa": []}]))
    return path


@pytest.mark.django_db(transaction=True)
def test_the_catch_up_writes_the_file_s_turns_in_turn_and_embeds_every_one(
    embeddings: Any, tmp_path: Path
) -> None:
    out = StringIO()
    report = tmp_path / "report.json"
    call_command(
        "bench_scale",
        "--entries",
        "7",
        "--locomo",
        str(_locomo(tmp_path / "locomo.json")),
        "--json",
        str(report),
        stdout=out,
    )
    result = json.loads(report.read_text())["catch_up"]
    assert (result["entries"], result["vectors"], result["notes"]) == (7, 7, "texts")
    written = sorted(MemoryEntryVector.objects.values_list("entry_version__text", flat=True))
    turns = [f"{speaker}: {text}" for speaker, text in zip(["Ann", "Bob", "Ann"], TURNS, strict=True)]
    assert written == sorted([*turns, *(f"{turn} (2)" for turn in turns), f"{turns[0]} (3)"])


@pytest.mark.django_db
def test_a_file_that_is_not_a_locomo_file_is_a_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"not": "a list"}')
    with pytest.raises(CommandError, match="cannot read"):
        call_command("bench_scale", "--entries", "3", "--locomo", str(broken), stdout=StringIO())
    with pytest.raises(CommandError, match="cannot read"):
        call_command(
            "bench_scale", "--entries", "3", "--locomo", str(tmp_path / "missing.json"), stdout=StringIO()
        )


@pytest.mark.django_db
def test_the_after_write_section_writes_between_prepares_and_reports_each_kind(
    embeddings: Any, tmp_path: Path
) -> None:
    from powercontext.memory.services import memory_remember

    for n in range(5):
        memory_remember(scope_id="after", kind="note", text=f"note {n} about the boat and the lake")
    report = tmp_path / "report.json"
    call_command(
        "bench_scale",
        "--sections",
        "after_write",
        "--scope",
        "after",
        "--rounds",
        "3",
        "--json",
        str(report),
        stdout=StringIO(),
    )
    result = json.loads(report.read_text())["after_write"]
    assert (result["entries"], result["rounds"]) == (8, 3)  # five, and one remember a round
    for kind in (
        "prepare_without_writes",
        "prepare_first_after_write",
        "prepare_second_after_write",
        "remember",
    ):
        assert 0 < result[kind]["p50_ms"] <= result[kind]["p95_ms"], kind
    with pytest.raises(CommandError, match="needs --scope"):
        call_command("bench_scale", "--sections", "after_write", stdout=StringIO())
    with pytest.raises(CommandError, match="no active entries"):
        call_command("bench_scale", "--sections", "after_write", "--scope", "empty", stdout=StringIO())
