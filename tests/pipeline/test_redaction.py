"""Redaction: every corpus secret goes, technical text stays, a second pass changes nothing."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext.core import redaction
from powercontext.core.redaction import Hit, Redacted
from powercontext.core.redaction_detectors import DETECTORS, redact
from powercontext.core.secret_patterns import PatternDetector
from tests.pipeline.secret_corpus import _PEM_LINES, BENIGN, CORPUS

MARKER = re.compile(r"\[REDACTED:([a-z0-9_]+)\]")


@pytest.mark.parametrize("case", CORPUS, ids=[case.name for case in CORPUS])
def test_it_removes_every_corpus_secret(case):
    result = redact(case.text)

    assert case.secret not in result.text
    assert case.secret in case.text
    assert case.type in result.findings
    assert f"[REDACTED:{case.type}]" in result.text


@pytest.mark.parametrize("case", CORPUS, ids=[case.name for case in CORPUS])
def test_findings_name_types_and_match_the_markers(case):
    result = redact(case.text)

    assert all(re.fullmatch(r"[a-z0-9_]+", finding) for finding in result.findings)
    assert list(result.findings) == MARKER.findall(result.text)
    assert not any(case.secret in finding for finding in result.findings)


def test_it_removes_every_secret_from_one_long_session():
    text = "\n\n".join(case.text for case in CORPUS)

    result = redact(text)

    assert not [case.name for case in CORPUS if case.secret in result.text]
    assert not [line for line in _PEM_LINES if line in result.text]


def test_a_private_key_goes_as_a_whole_block_and_the_text_around_it_stays():
    case = next(case for case in CORPUS if case.name == "rsa private key")

    result = redact(case.text)

    assert result.text == "key.pem:\n[REDACTED:private_key]\nthen chmod 600 key.pem"
    assert result.findings == ("private_key",)


def test_a_url_keeps_everything_but_its_password():
    result = redact("postgres://app:FakePw-123@db.internal:5432/app?sslmode=require")

    assert result.text == "postgres://app:[REDACTED:url_password]@db.internal:5432/app?sslmode=require"


def test_a_password_holding_an_at_sign_goes_whole():
    result = redact("mysql://root:not@real#pw@127.0.0.1:3306/app")

    assert result.text == "mysql://root:[REDACTED:url_password]@127.0.0.1:3306/app"


@pytest.mark.parametrize("text", BENIGN)
def test_technical_text_survives_unchanged(text):
    assert redact(text) == Redacted(text, ())


@pytest.mark.parametrize("text", [case.text for case in CORPUS] + list(BENIGN))
def test_it_is_idempotent(text):
    once = redact(text)

    assert redact(once.text).text == once.text
    assert redact(once.text).findings == ()


def test_a_marker_in_the_input_does_not_shield_a_secret_glued_to_it():
    result = redact("password=[REDACTED:secret_keyword]realFake-99")

    assert "realFake-99" not in result.text
    assert result.text.startswith("password=[REDACTED:secret_keyword]")
    assert redact(result.text).text == result.text


_pieces = st.sampled_from(
    [case.text for case in CORPUS]
    + list(BENIGN)
    + ["[REDACTED:jwt]", "password=", "://u:", "@", "\n", " ", "=", "'", '"', "-----BEGIN PRIVATE KEY-----"]
)


@given(st.lists(_pieces | st.text(max_size=20), max_size=8))
def test_it_is_idempotent_on_any_mix(parts):
    once = redact("".join(parts)).text

    assert redact(once).text == once


def test_overlapping_hits_merge_and_the_earlier_detector_names_them():
    text = "x SECRETVALUE y"
    first = PatternDetector("specific", re.compile(r"SECRET\w+"))
    second = PatternDetector("generic", re.compile(r"\w*VALUE"))

    result = redaction.redact(text, detectors=[second, first])

    assert result == Redacted("x [REDACTED:generic] y", ("generic",))
    assert redaction.redact(text, detectors=[first, second]).findings == ("specific",)


def test_a_hit_is_trimmed_around_markers():
    class Everything:
        def find(self, text):
            return [Hit(0, len(text), "any")]

    result = redaction.redact("ab[REDACTED:jwt]cd", detectors=[Everything()])

    assert result.text == "[REDACTED:any][REDACTED:jwt][REDACTED:any]"


def test_the_pure_module_needs_its_detectors_named():
    with pytest.raises(TypeError):
        redaction.redact("text")  # type: ignore[call-arg]


def test_the_library_detectors_are_in_the_set():
    types = {getattr(detector, "type", None) for detector in DETECTORS}

    assert {"aws_access_key", "slack_token", "slack_webhook", "jwt", "stripe_key", "gitlab_token"} <= types


def test_a_replacement_that_changes_how_its_neighbours_read_still_gives_a_fixed_point():
    # Found by the property above: after one pass, text glued to a marker read as a new secret.
    text = (
        "-----BEGIN PRIVATE KEY-----\n"
        + "RkFLRSBQUklWQVRFIEtFWSBNQVRFUklBTCBGT1IgUkVEQUNUSU9OIFRFU1RTIE9O\n"
        + "TFksIE5PVCBBIEtFWSBGQUtFIFBSSVZBVEUgS0VZIE1BVEVSSUFMIEZPUiBSRURB\n"
        + "Q1RJT04gVEVTVFMgT05MWSwgTk9UIEEgS0VZIEZBS0UgUFJJVkFURSBLRVkgTUFU\n"
        + "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
    once = redact(text)

    assert "RkFLRSBQUklWQVRF" not in once.text
    assert redact(once.text).text == once.text
