"""Secret redaction: every detected secret becomes ``[REDACTED:<type>]`` (pure: stdlib only).

Detection and replacement are split. A ``Detector`` reports ``Hit`` spans; ``redact`` merges the
spans of all detectors and rewrites the text. The detectors backed by the detect-secrets library
are built in ``powercontext.core.redaction_detectors``, because importing that library is not pure
(its package pulls in requests, subprocess and logging and keeps process-global settings), and
that module's ``redact(text)`` is what the application calls. This module holds the replacement
logic and the detectors that need no library: whole PEM blocks, passwords in URLs, the newer
GitHub token formats, AWS secret keys next to their name, ``Authorization: Bearer`` values,
secret-named assignments (keyword vocabulary passed in) and random-looking tokens (entropy
function passed in).

Invariants:

- ``findings`` holds secret *types*, one per replaced span, in text order; never a value and never
  a hash of one.
- Idempotent: ``redact(redact(x).text) == redact(x)`` for the text, because existing
  ``[REDACTED:<type>]`` markers are protected (a hit is trimmed to the parts outside them).
- Overlapping hits merge into one replacement; its type is the one of the earliest hit, ties going
  to the detector listed first (the most specific).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

MARKER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")


@dataclass(frozen=True)
class Hit:
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
    protected = [match.span() for match in MARKER.finditer(text)]
    spans: list[tuple[int, int, int, str]] = []
    for priority, detector in enumerate(detectors):
        for hit in detector.find(text):
            for start, end in _outside(hit.start, hit.end, protected):
                if any(char.isalnum() for char in text[start:end]):
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


def _outside(start: int, end: int, protected: Sequence[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """The parts of ``[start, end)`` that lie outside every protected span."""
    for p_start, p_end in protected:
        if p_end <= start or p_start >= end:
            continue
        if p_start > start:
            yield start, p_start
        start = max(start, p_end)
        if start >= end:
            return
    if start < end:
        yield start, end


# --- Detectors ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PatternDetector:
    """Hits of one regular expression: the named group ``secret`` when the pattern has one (the
    surrounding text is context, not secret), else the whole match, optionally extended over the
    token characters that follow (so a fixed-length pattern never leaves a tail behind) and
    checked by ``accept``."""

    type: str
    pattern: re.Pattern[str]
    extend: re.Pattern[str] | None = None
    accept: Callable[[str], bool] | None = None

    def find(self, text: str) -> Iterator[Hit]:
        for match in self.pattern.finditer(text):
            if "secret" in self.pattern.groupindex:
                start, end = match.span("secret")
            else:
                start, end = match.span()
            if start < 0 or start == end:
                continue
            if self.extend is not None:
                tail = self.extend.match(text, end)
                if tail is not None:
                    end = tail.end()
            if self.accept is not None and not self.accept(text[start:end]):
                continue
            yield Hit(start, end, self.type)


_PEM_LABEL = r"(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?"
# The whole block, BEGIN to END. A block cut off by the projection window has no END: then the
# header and every following line that looks like key material (base64 or an RFC 1421 header).
PEM_PRIVATE_KEY = PatternDetector(
    "private_key",
    re.compile(
        rf"-{{4,5}} ?BEGIN {_PEM_LABEL} ?-{{4,5}}"
        rf"(?:.*?-{{4,5}} ?END {_PEM_LABEL} ?-{{4,5}}"
        r"|(?:[ \t]*\r?\n[ \t]*(?:[A-Za-z0-9+/=]+|[A-Za-z-]+:[^\n]*))*)",
        re.DOTALL,
    ),
)

# scheme://user:password@host — any scheme (postgres, mysql, redis with an empty user, https…).
# The password runs to the last "@" before the host, so a password holding "@" is covered whole.
URL_PASSWORD = PatternDetector(
    "url_password",
    re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:(?P<secret>[^\s/]+)@(?=[^\s@/?#]+)"),
)

# Classic (ghp_, gho_, ghu_, ghs_, ghr_) and fine-grained (github_pat_) tokens, whole length.
GITHUB_TOKEN = PatternDetector(
    "github_token",
    re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9_]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
)

# A 40-character secret access key written next to its name, quoted or not, in code, env files
# or prose ("aws_secret_access_key = …", "AWS secret key: …").
AWS_SECRET_KEY = PatternDetector(
    "aws_secret_key",
    re.compile(
        r"(?i)aws[\w .-]{0,30}?(?:secret|key)[\w .-]{0,20}?[\"']?\s*(?::=|=>|=|:)\s*[\"']?"
        r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
    ),
)

# OpenAI-style API keys (sk-, sk-proj-, sk-svcacct-, sk-admin-): the library's detector only knows
# the older sk-...T3BlbkFJ... shape.
OPENAI_KEY = PatternDetector(
    "openai_key",
    re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
)

BEARER_TOKEN = PatternDetector(
    "bearer_token",
    re.compile(r"(?i)\b(?:bearer|token)\s+(?P<secret>[A-Za-z0-9._~+/=-]{16,})"),
    accept=lambda value: any(char.isdigit() for char in value),
)


def _plausible_secret_value(value: str, quoted: bool) -> bool:
    """Whether the value of a secret-named assignment looks like a secret, not a reference."""
    if len(value) < (4 if quoted else 6):
        return False
    if value[0] in "$<{%/~.[*" or "(" in value or "[" in value:
        return False  # ${VAR}, <placeholder>, %s, paths, os.environ[...], settings.X, ***
    if quoted:
        return True
    if value.isdigit() or re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", value):
        return False  # a number (a timeout, a size) or a dotted name (a class, a setting)
    return len(value) >= 12 or any(not char.isalpha() for char in value)


@dataclass(frozen=True)
class KeywordAssignmentDetector:
    """The value assigned to a secret-sounding name (``password: …``, ``"api_key": "…"``,
    ``--db-pass=…``). ``keywords`` are regular-expression fragments (``api_?key``); in prose the
    value must look like a secret (see ``_plausible_secret_value``)."""

    type: str
    keywords: tuple[str, ...]
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = "|".join(self.keywords)
        object.__setattr__(
            self,
            "pattern",
            re.compile(
                rf"(?i)(?<![A-Za-z0-9])(?:[A-Za-z0-9]*[_-])*(?:{names})[A-Za-z0-9_-]*[\"'\]]{{0,2}}"
                r"[ \t]*(?::=|=>|==?|:)[ \t]*(?:\[REDACTED:[a-z0-9_]+\])*"
                r"(?:(?P<quote>[\"'`])(?P<quoted>[^\"'`\n]+)(?P=quote)|(?P<bare>[^\s\"'`,;]+))"
            ),
        )

    def find(self, text: str) -> Iterator[Hit]:
        for match in self.pattern.finditer(text):
            group = "quoted" if match.group("quoted") is not None else "bare"
            if _plausible_secret_value(match.group(group), quoted=group == "quoted"):
                yield Hit(match.start(group), match.end(group), self.type)


# "=" only as base64 padding, so "NAME=value" is two tokens.
_TOKEN = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{20,}={0,2}")
_RUN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")


@dataclass(frozen=True)
class HighEntropyDetector:
    """Random-looking tokens: at least ``min_length`` base64/url-safe characters mixing upper
    case, lower case and digits, with a Shannon entropy above ``limit`` bits per character and
    short runs (a mean run of letters of one case, or of digits, under ``max_mean_run``).

    The gates keep ordinary technical text: words, snake_case and SCREAMING_CASE names, lower-case
    hex (commit ids, checksums) and UUIDs lack one of the three classes; paths (leading ``/``,
    ``./``, ``~/``) are skipped; identifiers such as ``HTTP2ServerPushHandlerFactory`` are as
    entropic as a random token of their length but are made of words (mean run 4-5 characters,
    against under 3 for random base64). Secrets these gates let through (hex keys, lower-case-only
    keys) are caught only by a specific or a keyword detector.
    """

    type: str
    entropy: Callable[[str], float]
    limit: float
    min_length: int = 20
    max_mean_run: float = 3.0

    def find(self, text: str) -> Iterator[Hit]:
        for match in _TOKEN.finditer(text):
            token = match.group()
            if len(token) < self.min_length or token.startswith(("/", "./", "../", "~/")) or "//" in token:
                continue
            if not (
                any(char.isupper() for char in token)
                and any(char.islower() for char in token)
                and any(char.isdigit() for char in token)
            ):
                continue
            runs = _RUN.findall(token)
            if sum(map(len, runs)) / len(runs) >= self.max_mean_run:
                continue
            if self.entropy(token) > self.limit:
                yield Hit(match.start(), match.end(), self.type)


# The library-free detectors, most specific first (their order breaks ties between overlapping
# hits). The keyword and entropy detectors need the library's vocabulary and entropy function and
# are built in powercontext.core.redaction_detectors.
STRUCTURAL_DETECTORS: tuple[Detector, ...] = (
    PEM_PRIVATE_KEY,
    GITHUB_TOKEN,
    AWS_SECRET_KEY,
    URL_PASSWORD,
    OPENAI_KEY,
    BEARER_TOKEN,
)
