"""The embedder runs the pinned MiniLM file requantized for int8 arithmetic: built once into the
data directory, checked by its checksum, rebuilt when damaged, close to the pinned file's
vectors, and the pinned file itself (under its own model id) when it cannot be built."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from powercontext.search.vectors import embedding, model_build

SENTENCES = [
    "Caroline went to an LGBTQ support group on Tuesday.",
    "Melanie painted a sunrise over the lake last year.",
    "Use psycopg 3 for the database driver.",
    "The ledger table is append-only.",
    "What did Caroline research?",
]


@pytest.fixture
def data_dir(settings: Any, tmp_path: Path) -> Path:
    settings.DATA_DIR = tmp_path
    return tmp_path


def test_the_requantized_file_is_built_once_and_then_read(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, _ = embedding.model_files()
    built = model_build.requantized(source, embedding.MODEL_SHA256)
    assert built.parent == data_dir / "models" and built.is_file()
    assert built.with_suffix(".sha256").read_text() == model_build._sha256(built)

    calls: list[Path] = []
    monkeypatch.setattr(model_build, "build", lambda source, target: calls.append(target))
    assert model_build.requantized(source, embedding.MODEL_SHA256) == built
    assert calls == []


def test_a_damaged_file_is_built_again(data_dir: Path) -> None:
    source, _ = embedding.model_files()
    built = model_build.requantized(source, embedding.MODEL_SHA256)
    good = built.read_bytes()
    built.write_bytes(good[: len(good) // 2])
    assert model_build.requantized(source, embedding.MODEL_SHA256) == built
    assert built.read_bytes() == good


def test_the_requantized_vectors_stay_close_to_the_pinned_files(data_dir: Path) -> None:
    fast = embedding.Embedder()
    assert fast.model_id == embedding.MODEL_ID
    pinned = embedding.Embedder()
    import onnxruntime as ort

    pinned._session = ort.InferenceSession(
        str(embedding.model_files()[0]), providers=["CPUExecutionProvider"]
    )
    a = np.array([fast.embed(text) for text in SENTENCES])
    b = np.array([pinned.embed(text) for text in SENTENCES])
    assert (a * b).sum(axis=1).min() > 0.98
    # The neighbours agree: each sentence's nearest other sentence is the same.
    nearest = [np.argmax(m @ m.T - 2 * np.eye(len(m)), axis=1).tolist() for m in (a, b)]
    assert nearest[0] == nearest[1]


def test_without_the_requantized_file_the_pinned_file_runs_under_its_own_id(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(source: Path, sha256: str) -> Path:
        raise ModuleNotFoundError("onnx")

    monkeypatch.setattr(model_build, "requantized", broken)
    model = embedding.Embedder()
    assert model.model_id == embedding.PINNED_MODEL_ID != embedding.MODEL_ID
    assert model.embed("a sentence").shape == (embedding.DIMENSIONS,)
    assert "requantized model unavailable (ModuleNotFoundError): running the pinned file" in caplog.text


def test_the_build_keeps_the_quantization_tools_notes_out_of_the_log(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    caplog.set_level(logging.INFO)
    source, _ = embedding.model_files()
    model_build.build(source, model_build.derived_path(embedding.MODEL_SHA256))
    assert not [record for record in caplog.records if "onnxruntime" in record.pathname]
    assert logging.getLogger().filters == []
