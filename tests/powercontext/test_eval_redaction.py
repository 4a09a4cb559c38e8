"""The secret corpus (powercontext/evaluation/data/secrets.jsonl) and ``manage.py eval_redaction``:
the product's redactor keeps recall at 0.99 or more and changes no near miss."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from powercontext.core.redaction_detectors import redact
from powercontext.evaluation import secret_corpus
from powercontext.evaluation.secret_corpus import RECALL_FLOOR, Sample, evaluate, load, survives

COMMAND = "powercontext.evaluation.management.commands.eval_redaction"


def test_the_corpus_holds_enough_shapes_and_near_misses() -> None:
    samples = load()
    secrets = [s for s in samples if not s.negative]
    negatives = [s for s in samples if s.negative]

    assert len(secrets) >= 100
    assert len({s.shape for s in secrets}) >= 40
    assert len(negatives) >= 30
    assert all(s.secret in s.text for s in secrets)
    assert not {s.shape for s in secrets} & {s.shape for s in negatives}


def test_the_product_redactor_catches_the_corpus_and_leaves_the_near_misses() -> None:
    report = evaluate(load(), lambda text: redact(text).text)

    assert report.recall >= RECALL_FLOOR, report.missed
    assert report.changed == []


def test_a_secret_counts_as_caught_only_when_none_of_it_survives() -> None:
    secret = "Qm7xT2vLp9RkW4zN"

    assert survives(secret, f"token {secret[:8]}[REDACTED:x]")
    assert survives("correct horse battery staple", "password: [REDACTED:x] horse battery staple")
    assert not survives(secret, "token [REDACTED:x]")


def test_a_redactor_that_misses_or_overreaches_is_reported_per_shape() -> None:
    samples = [
        Sample("pgpass", "h:5432:db:u:Zq8-fake-Pw", "Zq8-fake-Pw"),
        Sample("pgpass", "h:5432:db:u:Other-fake-1", "Other-fake-1"),
        Sample("commit_hash", "fixed in 3f9a1c07"),
    ]

    report = evaluate(samples, lambda text: text.replace("Zq8-fake-Pw", "[X]").replace("3f9a1c07", "[X]"))

    assert (report.caught, report.samples, report.recall) == (1, 2, 0.5)
    assert report.missed == ["pgpass"] and report.changed == ["commit_hash"]
    assert vars(report.shapes["commit_hash"]) == {
        "shape": "commit_hash",
        "samples": 0,
        "caught": 0,
        "negatives": 1,
        "changed": 1,
    }
    assert not report.passes


def test_a_sample_without_its_placeholder_is_refused(tmp_path) -> None:
    path = tmp_path / "secrets.jsonl"
    path.write_text(json.dumps({"shape": "x", "secret": ["a", "b"], "text": "no placeholder"}) + "\n")

    with pytest.raises(ValueError, match="secrets.jsonl:1"):
        load(path)


def test_the_command_prints_figures_per_shape_and_passes_its_check() -> None:
    out = StringIO()

    call_command("eval_redaction", "--json", "--check", stdout=out)

    report = json.loads(out.getvalue())
    assert report["passes"] is True and report["false_positives"] == 0
    assert report["recall"] >= RECALL_FLOOR
    assert {"huggingface_token", "pgpass", "netrc", "cookie_header", "passphrase"} <= {
        s["shape"] for s in report["shapes"]
    }


def test_the_command_fails_its_check_when_a_detector_regresses(monkeypatch) -> None:
    # A redactor that no longer knows one shape: recall falls under the floor for the whole corpus.
    def weaker(text: str):
        result = redact(text)
        return result if "pgpass" not in text and ":5432:" not in text else type(result)(text, ())

    monkeypatch.setattr(f"{COMMAND}.redact", weaker)
    out = StringIO()

    with pytest.raises(CommandError, match="recall"):
        call_command("eval_redaction", "--check", stdout=out)
    assert re.search(r"^pgpass +1/3 ", out.getvalue(), re.MULTILINE)


def test_the_command_fails_its_check_when_a_near_miss_changes(monkeypatch) -> None:
    def eager(text: str):
        result = redact(text)
        return type(result)(result.text.replace("trace id", "[REDACTED:x]"), result.findings)

    monkeypatch.setattr(f"{COMMAND}.redact", eager)

    with pytest.raises(CommandError, match="1 near misses changed"):
        call_command("eval_redaction", "--check", stdout=StringIO())


def test_the_mixed_text_has_the_size_asked_and_every_adversarial_unit() -> None:
    text = secret_corpus.mixed_text(load(), 300_000)

    assert len(text) == 300_000
    assert all(unit in text for unit in secret_corpus.ADVERSARIAL_UNITS)
