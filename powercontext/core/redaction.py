"""Secret redaction: every detected secret becomes ``[REDACTED:<type>]`` (pure: stdlib only).

Detection and replacement are split. A ``Detector`` reports ``Hit`` spans; ``redact`` merges the
spans of all detectors and rewrites the text. The detectors backed by the detect-secrets library
are built in ``powercontext.core.redaction_detectors``, because importing that library is not pure
(its package pulls in requests, subprocess and logging and keeps process-global settings), and
that module's ``redact(text)`` is what the application calls. This module holds the replacement
logic; the detectors that need no library (whole PEM blocks, passwords in URLs, the newer
GitHub token formats, provider tokens known by their prefix, AWS secret keys next to their name,
``Authorization: Bearer`` values, ``.netrc`` and ``.pgpass`` passwords, cookie values) are in
``powercontext.core.secret_patterns``, and those that read words around a value (secret-named
assignments and passphrases, command-line passwords, passwords in prose, random-looking tokens)
in ``powercontext.core.secret_phrases``.

Invariants:

- ``findings`` holds secret *types*, one per replaced span, in text order; never a value and never
  a hash of one.
- Idempotent: ``redact(redact(x).text) == redact(x)`` for the text, because existing
  ``[REDACTED:<type>]`` markers are protected (a hit is trimmed to the parts outside them).
- Overlapping hits merge into one replacement; its type is the one of the earliest hit, ties going
  to the detector listed first (the most specific).
- Linear time. Detection runs on the text without its default-ignorable characters (a token
  split by a zero-width space is still one token; hits map back to the original offsets, so the
  invisible characters inside a secret go with it). Every detector sees bounded windows
  (``windows``: runs of whole lines of at most ``WINDOW`` characters; a longer line in chunks
  overlapping by ``OVERLAP``), so no expression ever runs on more than ``WINDOW`` characters,
  whatever the input; a detector with ``whole_text = True`` (the PEM block scanner, the
  ``.netrc`` scanner, whose entries span lines) gets the whole text, finds its anchors with
  ``str.find`` and bounds each of its own expression calls (to one line, or to a few hundred
  characters around the anchor).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from powercontext.core.invisible import strip_default_ignorable

MARKER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")


@dataclass(frozen=True)
class Hit:
    """One secret a detector found: the span ``text[start:end]`` and the secret type that its
    ``[REDACTED:type]`` marker will name."""

    start: int
    end: int
    type: str


@dataclass(frozen=True)
class Redacted:
    text: str
    findings: tuple[str, ...] = ()


class Detector(Protocol):
    def find(self, text: str) -> Iterable[Hit]: ...


def marker(secret_type: str) -> str:
    return f"[REDACTED:{secret_type}]"


MAX_PASSES = 4
# Windows: no detector expression runs on more than WINDOW characters; a secret of up to OVERLAP
# characters on a line longer than WINDOW still lies whole inside one window.
WINDOW = 2048
OVERLAP = 512


def windows(text: str, size: int = WINDOW, overlap: int = OVERLAP) -> Iterator[tuple[int, int]]:
    """``(start, end)`` spans covering ``text``: runs of whole lines of at most ``size``
    characters, cut after a newline; a line longer than ``size`` in chunks of ``size`` that
    overlap by ``overlap``. Every character lies in at most two spans."""
    start, length = 0, len(text)
    while start < length:
        if length - start <= size:
            yield start, length
            return
        cut = text.rfind("\n", start, start + size)
        if cut >= start:
            yield start, cut + 1
            start = cut + 1
        else:
            yield start, start + size
            start += size - overlap


def redact(text: str, *, detectors: Sequence[Detector]) -> Redacted:
    """``text`` with every hit of ``detectors`` replaced by its marker.

    A replacement can bring text next to a marker that a detector then reads differently (a
    name glued to ``[REDACTED:…]``), so passes repeat until nothing changes: the result is a
    fixed point and redacting it again changes nothing. ``detectors`` is required on purpose: a
    call without the library-backed set would silently redact less. The application uses
    ``powercontext.core.redaction_detectors.redact``.
    """
    findings: list[str] = []
    for _ in range(MAX_PASSES):
        once = _redact_once(text, detectors)
        if not once.findings:
            break
        findings.extend(once.findings)
        text = once.text
    return Redacted(text, tuple(findings))


def _redact_once(text: str, detectors: Sequence[Detector]) -> Redacted:
    visible, index = strip_default_ignorable(text)
    protected = [match.span() for match in MARKER.finditer(visible)]
    spans: list[tuple[int, int, int, str]] = []
    spans_of_windows = list(windows(visible))
    for priority, detector in enumerate(detectors):
        if getattr(detector, "whole_text", False):
            hits: Iterable[Hit] = detector.find(visible)
        else:
            hits = _windowed(detector, visible, spans_of_windows)
        for hit in hits:
            for start, end in _outside(hit.start, hit.end, protected):
                if any(char.isalnum() for char in visible[start:end]):
                    if index is not None:
                        start, end = index[start], index[end - 1] + 1
                    spans.append((start, priority, end, hit.type))
    spans.sort()
    merged: list[tuple[int, int, str]] = []
    for start, _priority, end, secret_type in spans:
        if merged and start < merged[-1][1]:
            last_start, last_end, last_type = merged[-1]
            merged[-1] = (last_start, max(last_end, end), last_type)
        else:
            merged.append((start, end, secret_type))
    if not merged:
        return Redacted(text)
    pieces: list[str] = []
    cursor = 0
    for start, end, secret_type in merged:
        pieces.append(text[cursor:start])
        pieces.append(marker(secret_type))
        cursor = end
    pieces.append(text[cursor:])
    return Redacted("".join(pieces), tuple(secret_type for _, _, secret_type in merged))


def _windowed(detector: Detector, text: str, spans: Sequence[tuple[int, int]]) -> Iterator[Hit]:
    for start, end in spans:
        for hit in detector.find(text[start:end]):
            yield Hit(hit.start + start, hit.end + start, hit.type)


def _outside(start: int, end: int, protected: Sequence[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """The parts of ``[start, end)`` that lie outside every protected span (sorted, disjoint)."""
    first = max(bisect_right(protected, (start, start)) - 1, 0)
    for p_start, p_end in protected[first:]:
        if p_start >= end:
            break
        if p_end <= start:
            continue
        if p_start > start:
            yield start, p_start
        start = max(start, p_end)
        if start >= end:
            return
    if start < end:
        yield start, end
