"""Calibrating the pack's cut (``eval_retrieval --pack-cut``, ``powercontext.evaluation.pack_cut``):
the logistic fit recovers a known model, and on a tiny LoCoMo-shaped file (made here) the
threshold-0 packs are exactly prepare's packs with the cut off."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from powercontext.evaluation import pack_cut
from powercontext.prepare import cut
from tests.powercontext.test_eval_retrieval import sample

pytestmark = pytest.mark.django_db


def test_the_fit_recovers_a_known_model() -> None:
    rng = np.random.default_rng(7)
    truth = cut.EvidenceModel(
        intercept=-2.0,
        position=-0.8,
        relative_score=1.5,
        score=0.5,
        similarity=1.0,
        similarity_gap=-0.5,
        lexical_share=2.0,
        length=0.3,
        both_channels=-0.4,
        asks=-1.0,
        speaker=0.8,
        near_better=0.6,
    )
    rows = rng.uniform(0.0, 2.0, size=(40_000, len(cut.FIGURES)))
    labels = [rng.random() < cut.estimate(row, truth) for row in rows]

    fitted = pack_cut.fit(rows.tolist(), labels, l2=1e-6)

    for name in ("intercept", *cut.FIGURES):
        assert math.isclose(getattr(fitted, name), getattr(truth, name), abs_tol=0.15), name


def test_threshold_zero_is_prepare_with_the_cut_off_and_higher_ones_take_fewer_items(
    tmp_path: Path, settings: Any, capsys: Any
) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample("a"), sample("b")]), encoding="utf-8")
    settings.POWERCONTEXT_PACK_CUT = 0
    plain_out, cut_out = tmp_path / "plain.json", tmp_path / "cut.json"
    call_command("eval_retrieval", "--locomo", str(path), "--json", str(plain_out), "--run-id", "p1")

    call_command(
        "eval_retrieval",
        "--locomo",
        str(path),
        "--pack-cut-thresholds",
        "0,0.5,0.99",
        "--json",
        str(cut_out),
        "--run-id",
        "c1",
    )

    plain = json.loads(plain_out.read_text(encoding="utf-8"))["overall"]
    summary = json.loads(cut_out.read_text(encoding="utf-8"))
    by_threshold = summary["thresholds"]
    assert list(by_threshold) == ["0.0", "0.5", "0.99"]
    assert by_threshold["0.0"] == plain
    items = [by_threshold[t]["mean_items"] for t in ("0.0", "0.5", "0.99")]
    assert items == sorted(items, reverse=True)
    assert by_threshold["0.99"]["mean_items"] <= 1.0  # only each pack's first hit survives
    assert set(summary["model"]) == {"intercept", *cut.FIGURES}
    assert "model fitted on every conversation" in capsys.readouterr().out


def test_thresholds_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample("a")]), encoding="utf-8")
    for bad in ("1.5", "x", ","):
        with pytest.raises(CommandError, match="--pack-cut-thresholds"):
            call_command("eval_retrieval", "--locomo", str(path), "--pack-cut-thresholds", bad)
    with pytest.raises(CommandError, match="combines with neither"):
        call_command("eval_retrieval", "--locomo", str(path), "--pack-cut", "--negatives")
