"""Redaction does linear work on adversarial input (N1), counted, never timed.

Every windowed detector is wrapped in a recorder that counts the characters it is handed: no
call may exceed ``WINDOW`` characters, and doubling the input at most doubles the characters
handed out. The PEM scanner, which reads the whole text, gets recording expressions: every call
is bounded to one line and the total stays linear. Inputs are the shapes that made the old
expressions backtrack (``'password_' * 700`` was cubic in the keyword detector; a run of spaces
after ``key`` was cubic in three library patterns), 25 to 100 KB each.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext.core import redaction
from powercontext.core.redaction import OVERLAP, WINDOW, Hit, windows
from powercontext.core.redaction_detectors import _CUBIC_SEPARATOR, _LINEAR_SEPARATOR, DETECTORS
from powercontext.core.secret_patterns import PEM_PRIVATE_KEY, PemBlockDetector

ADVERSARIAL = {
    "keyword suffixes": "password_",
    "dotted names": "a.",
    "colons": "a:",
    "at signs": "x://u:@@@@",
    "schemes": "a://",
    "mixed case digits": "Aa1",
    "pem headers": "-----BEGIN PRIVATE KEY-----\n",
    "prose verbs": "password is ",
    "mysql flags": "mysql -p",
    "long flags": "--password ",
    "jwt prefixes": "eyJ",
    "slack prefixes": "xoxb-1-",
    "open quotes": 'password="',
    "spaces after a key": "key" + " " * 4000 + "\n",
    "zero-width splits": "ghp_\u200b",
    "bearer words": "Bearer ",
    "aws names": "aws secret key ",
    "curl users": "-u a:",
    "slashes": "//",
    "digits": "1234567890",
    "provider prefixes": "hf_dop_v1_AIzaPMAK-dp.st.",
    "netrc entries": "machine h login u password ",
    "pgpass fields": "a:1:b:c:",
    "cookie chains": "cookie:a=1;",
    "passphrase words": "password: aa bb ",
}


@dataclass
class Recorder:
    detector: redaction.Detector
    calls: list[int] = field(default_factory=list)

    def find(self, text: str) -> Iterator[Hit]:
        self.calls.append(len(text))
        return iter(list(self.detector.find(text)))


def handed_out(text: str) -> tuple[int, int]:
    """(characters handed to windowed detectors in total, the largest single call)."""
    recorders = [Recorder(d) for d in DETECTORS if not getattr(d, "whole_text", False)]
    whole = [d for d in DETECTORS if getattr(d, "whole_text", False)]
    redaction.redact(text, detectors=[*whole, *recorders])
    calls = [size for recorder in recorders for size in recorder.calls]
    return sum(calls), max(calls, default=0)


def build(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


@pytest.mark.parametrize("unit", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_every_detector_sees_bounded_windows_and_work_grows_linearly(unit: str) -> None:
    half_total, half_largest = handed_out(build(unit, 50_000))
    total, largest = handed_out(build(unit, 100_000))

    assert max(half_largest, largest) <= WINDOW
    detectors = sum(1 for d in DETECTORS if not getattr(d, "whole_text", False))
    # Each character lies in at most two windows, each pass at most MAX_PASSES times.
    assert total <= 2 * 100_000 * detectors * redaction.MAX_PASSES
    assert total <= 2.1 * half_total + WINDOW * detectors * redaction.MAX_PASSES


@dataclass
class RecordingPattern:
    pattern: re.Pattern[str]
    spans: list[int] = field(default_factory=list)

    def _record(self, text: str, pos: int, endpos: int | None) -> None:
        self.spans.append(min(len(text) if endpos is None else endpos, len(text)) - pos)

    def search(self, text: str, pos: int = 0, endpos: int | None = None) -> re.Match[str] | None:
        self._record(text, pos, endpos)
        return self.pattern.search(text, pos, len(text) if endpos is None else endpos)

    def match(self, text: str, pos: int = 0, endpos: int | None = None) -> re.Match[str] | None:
        self._record(text, pos, endpos)
        return self.pattern.match(text, pos, len(text) if endpos is None else endpos)

    def fullmatch(self, text: str, pos: int = 0, endpos: int | None = None) -> re.Match[str] | None:
        self._record(text, pos, endpos)
        return self.pattern.fullmatch(text, pos, len(text) if endpos is None else endpos)


def pem_work(text: str) -> tuple[int, int]:
    base = PEM_PRIVATE_KEY
    patterns = [RecordingPattern(p) for p in (base.header, base.footer, base.body, base.inline)]
    detector = PemBlockDetector("private_key", *patterns)  # type: ignore[arg-type]
    list(detector.find(text))
    spans = [span for pattern in patterns for span in pattern.spans]
    return sum(spans), max(spans, default=0)


PEM_ADVERSARIAL = {
    "headers": "-----BEGIN PRIVATE KEY-----\n",
    "headers without newlines": "-----BEGIN RSA PRIVATE KEY-----",
    "header then one long body line": None,
    "headers and body lines": "-----BEGIN PRIVATE KEY-----\nQUJD\n",
    "label words": "PRIVATE KEY PRIVATE KEY ",
    "dashes": "-----",
}


@pytest.mark.parametrize("name", PEM_ADVERSARIAL)
def test_the_pem_scanner_reads_each_line_a_bounded_number_of_times(name: str) -> None:
    def text(size: int) -> str:
        unit = PEM_ADVERSARIAL[name]
        if unit is None:
            return "-----BEGIN PRIVATE KEY-----\n" + "A" * size
        return build(unit, size)

    half_total, _ = pem_work(text(50_000))
    total, largest = pem_work(text(100_000))

    assert largest <= PEM_PRIVATE_KEY.max_line + 96
    assert total <= 4 * 100_000 + PEM_PRIVATE_KEY.max_line
    assert total <= 2.1 * half_total + PEM_PRIVATE_KEY.max_line


def test_windows_cover_the_text_cut_after_newlines_and_overlap_on_long_lines() -> None:
    text = "short line\n" * 500 + "x" * 5000 + "\nend"
    spans = list(windows(text))

    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(end - start <= WINDOW for start, end in spans)
    assert all(b_start <= a_end for (_, a_end), (b_start, _) in zip(spans, spans[1:], strict=False))
    assert all(text[end - 1] == "\n" or end - start == WINDOW or end == len(text) for start, end in spans)
    long_chunks = [(s, e) for s, e in spans if "\n" not in text[s:e]]
    assert any(
        b_start == a_end - OVERLAP
        for (_, a_end), (b_start, _) in zip(long_chunks, long_chunks[1:], strict=False)
    )


def test_a_secret_across_a_chunk_border_of_a_long_line_is_still_found() -> None:
    secret = "gh" + "p_" + "FAKE0123456789abcdefABCDEF0123456789ab"
    for offset in range(WINDOW - 60, WINDOW + 10, 7):
        text = "x " * (offset // 2) + secret + " y" * 3000
        assert secret not in redaction.redact(text, detectors=DETECTORS).text


_separator_text = st.text(alphabet=" =:>\"'abk", max_size=12).map(lambda s: "key" + s + "A" * 44)


@given(_separator_text)
def test_the_rewritten_library_separator_accepts_the_same_texts(text: str) -> None:
    tail = r"(?:\"|'|)([a-zA-Z0-9_\-]{44}(?![a-zA-Z0-9_\-]))"
    cubic = re.compile("key" + _CUBIC_SEPARATOR + tail)
    linear = re.compile("key" + _LINEAR_SEPARATOR + tail)

    before, after = cubic.match(text), linear.match(text)

    assert (before is None) == (after is None)
    if before is not None and after is not None:
        assert before.span(1) == after.span(1)


def test_no_library_pattern_keeps_the_cubic_separator() -> None:
    patterns = [getattr(d, "pattern", None) for d in DETECTORS]

    assert not [p.pattern for p in patterns if p is not None and _CUBIC_SEPARATOR in p.pattern]
    assert sum(1 for p in patterns if p is not None and _LINEAR_SEPARATOR in p.pattern) >= 4
