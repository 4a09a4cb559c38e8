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
- Linear time. Detection runs on the text without its default-ignorable characters (a token
  split by a zero-width space is still one token; hits map back to the original offsets, so the
  invisible characters inside a secret go with it). Every detector sees bounded windows
  (``windows``: runs of whole lines of at most ``WINDOW`` characters; a longer line in chunks
  overlapping by ``OVERLAP``), so no expression ever runs on more than ``WINDOW`` characters,
  whatever the input; a detector with ``whole_text = True`` (the PEM block scanner) gets the
  whole text and bounds each of its own expression calls to one line.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from powercontext.core.invisible import strip_default_ignorable

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


_PEM_LABEL = r"(?:[A-Z0-9]{1,16} ){0,3}PRIVATE KEY(?: BLOCK)?"
_PEM_HEADER = re.compile(rf"-{{4,5}} ?BEGIN {_PEM_LABEL} ?-{{4,5}}")
_PEM_FOOTER = re.compile(rf"-{{4,5}} ?END {_PEM_LABEL} ?-{{4,5}}")
# A line of key material: base64, or an RFC 1421 header ("Proc-Type: 4,ENCRYPTED").
_PEM_BODY = re.compile(r"[ \t]*(?:[A-Za-z0-9+/=]+|[A-Za-z-]+:[^\n]*)[ \t]*\r?")
# The rest of a one-line block (a key inside JSON, "\n" escapes written out).
_PEM_INLINE = re.compile(r"(?:\\[nr]|[A-Za-z0-9+/=])+")


@dataclass(frozen=True)
class PemBlockDetector:
    """Whole PEM private-key blocks, BEGIN to END, in one linear pass over the lines.

    A block cut off by the projection window (no END) covers its header and every following line
    of key material. Every expression call is bounded to one line of at most ``max_line``
    characters (``header`` and ``footer`` to a short span around their marker), and each line
    is visited at most twice, so the scan is linear however the text is made.
    """

    type: str
    header: re.Pattern[str] = _PEM_HEADER
    footer: re.Pattern[str] = _PEM_FOOTER
    body: re.Pattern[str] = _PEM_BODY
    inline: re.Pattern[str] = _PEM_INLINE
    max_line: int = 4096
    whole_text: bool = True

    def find(self, text: str) -> Iterator[Hit]:
        position = 0
        while True:
            found = text.find("PRIVATE KEY", position)
            if found < 0:
                return
            position = found + len("PRIVATE KEY")
            begin = text.rfind("BEGIN", max(found - 64, 0), found)
            if begin < 0:
                continue
            header = self.header.search(text, max(begin - 6, 0), min(position + 12, len(text)))
            if header is None or header.start() > found:
                continue
            end = self._block_end(text, header.end())
            yield Hit(header.start(), end, self.type)
            position = max(position, end)

    def _block_end(self, text: str, start: int) -> int:
        line_end = _line_end(text, start)
        # An END on the header's own line is at the next "PRIVATE KEY" (a one-line block).
        after = text.find("PRIVATE KEY", start, line_end)
        if after >= 0:
            footer = self.footer.search(text, max(after - 64, start), min(after + 23, line_end))
            if footer is not None:
                return footer.end()
        inline = self.inline.match(
            text, start, min(line_end, start + self.max_line, *([after] if after >= 0 else []))
        )
        end = inline.end() if inline is not None else start
        cursor = line_end + 1
        while cursor < len(text):
            line_end = _line_end(text, cursor)
            if line_end - cursor > self.max_line:
                break
            footer = self.footer.search(text, cursor, line_end)
            if footer is not None:
                return footer.end()
            if cursor == line_end or text[cursor:line_end].isspace():
                cursor = line_end + 1  # a blank line inside a block
                continue
            if self.body.fullmatch(text, cursor, line_end) is None:
                break
            end = line_end
            cursor = line_end + 1
        return end


def _line_end(text: str, start: int) -> int:
    end = text.find("\n", start)
    return len(text) if end < 0 else end


PEM_PRIVATE_KEY = PemBlockDetector("private_key")

# scheme://user:password@host — any scheme (postgres, mysql, redis with an empty user, https…).
# The password runs to the last "@" before the host, so a password holding "@" is covered whole.
URL_PASSWORD = PatternDetector(
    "url_password",
    re.compile(
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s:/@]{0,256}:(?P<secret>[^\s/@]+(?:@[^\s/@]+)*)@"
        r"(?=[^\s@/?#])"
    ),
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
    re.compile(r"(?i)\b(?:bearer|token|basic)\s+(?P<secret>[A-Za-z0-9._~+/=-]{16,})"),
    accept=lambda value: any(char.isdigit() for char in value),
)


def _plausible_secret_value(value: str, quoted: bool) -> bool:
    """Whether the value of a secret-named assignment looks like a secret, not a reference."""
    if len(value) < (4 if quoted else 6):
        return False
    if value[0] in "$<{%/~.[*-" or "(" in value or "[" in value:
        return False  # ${VAR}, <placeholder>, %s, paths, os.environ[...], settings.X, ***, a flag
    if quoted:
        return True
    if value.isdigit() or re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", value):
        return False  # a number (a timeout, a size) or a dotted name (a class, a setting)
    if re.fullmatch(r"[a-z]+(?:[-_][a-z]+)+", value):
        return False  # lower-case words joined by - or _: the name of a secret, not one
    return len(value) >= 12 or any(not char.isalpha() for char in value)


# Names that hold a setting about a secret, not the secret (``PASSWORD_FILE``, ``secret_name``).
_NOT_A_SECRET_NAME = re.compile(
    r"(?i)[_.-](?:name|file|path|dir|ids?|ttl|length|len|type|url|uri|timeout|expiry|expires|reset|policy|"
    r"count|size|min|max|prompt|field|header|rotation|version|mode|store|manager|backend|provider|source|ref|"
    r"env|hashers?|validators?|required|enabled|format|pattern|regex|label|hint|help|command|cmd)s?$"
)
MAX_NAME = 64


@dataclass(frozen=True)
class KeywordAssignmentDetector:
    """The value assigned to a secret-sounding name (``password: …``, ``"api_key": "…"``,
    ``--db-pass=…``, ``PGPASSWORD=…``, ``MYSQL_PWD=…``, ``X-Api-Key: …``). ``keywords`` are
    regular-expression fragments (``api_?key``) searched anywhere in the name (after ``-`` and
    ``.`` become ``_``); a bare value must look like a secret (see ``_plausible_secret_value``).

    Linear: a name starts only where no name character precedes it, so each name is read once;
    the keyword search then runs on the name alone (at most ``MAX_NAME`` characters).
    """

    type: str
    keywords: tuple[str, ...]
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)
    names: re.Pattern[str] = field(init=False, repr=False, compare=False)
    value: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", re.compile("|".join(self.keywords), re.IGNORECASE))
        object.__setattr__(
            self,
            "pattern",
            re.compile(r"(?<![A-Za-z0-9_.-])(?P<name>[A-Za-z0-9_.-]+)[\"'\]]{0,2}[ \t]*(?::=|=>|==?|:)"),
        )
        object.__setattr__(
            self,
            "value",
            re.compile(
                r"[ \t]*(?:\[REDACTED:[a-z0-9_]+\])*"
                r"(?:(?P<quote>[\"'`])(?P<quoted>[^\"'`\n]{1,256})(?P=quote)|(?P<bare>[^\s\"'`,;]{1,256}))"
            ),
        )

    def secret_name(self, name: str) -> bool:
        if len(name) > MAX_NAME or _NOT_A_SECRET_NAME.search(name):
            return False
        return self.names.search(name.replace("-", "_").replace(".", "_")) is not None

    def find(self, text: str) -> Iterator[Hit]:
        for match in self.pattern.finditer(text):
            if not self.secret_name(match.group("name")):
                continue  # the search goes on after the operator: ``--from-literal=password=…``
            value = self.value.match(text, match.end())
            if value is None:
                continue
            group = "quoted" if value.group("quoted") is not None else "bare"
            if _plausible_secret_value(value.group(group), quoted=group == "quoted"):
                yield Hit(value.start(group), value.end(group), self.type)


_VALUE = r"(?:(?P<q>['\"])(?P<quoted>[^'\"\n]{1,256})(?P=q)|(?P<bare>[^\s'\"`;|&]{1,256}))"


@dataclass(frozen=True)
class CommandLineDetector:
    """Passwords on command lines: ``mysql -pSECRET``, ``sshpass -p 'SECRET'``, ``docker login
    -p SECRET``, ``curl -u user:SECRET``, and ``--password SECRET`` / ``--api-key SECRET`` after
    a flag whose name holds a keyword (given as for ``KeywordAssignmentDetector``).

    ``-p`` means a port or "parents" in most tools, so it counts only after the commands that
    take a password with it. Every repeat is bounded; each match starts at a command name or a
    flag, so the scan is linear.
    """

    type: str
    keywords: tuple[str, ...]
    patterns: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    names: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", re.compile("|".join(self.keywords), re.IGNORECASE))
        flag_value = rf"(?:=|[ \t]+){_VALUE}"
        object.__setattr__(
            self,
            "patterns",
            (
                # mysql, mysqldump, mysqladmin, mariadb: the password is glued to -p.
                re.compile(
                    r"(?i)(?<![\w-])(?:mysql\w{0,8}|mariadb\w{0,8})(?![\w-])[^\n|;&]{0,200}?(?<!\S)(?-i:-p)"
                    rf"(?![\s-]){_VALUE}"
                ),
                re.compile(
                    r"(?i)(?<![\w-])redis-cli(?![\w-])[^\n|;&]{0,200}?(?<!\S)(?-i:-a|--pass|--password)"
                    rf"(?:=|[ \t]+){_VALUE}"
                ),
                re.compile(
                    r"(?i)(?<![\w-])(?:sshpass|(?:docker|podman|nerdctl|buildah|skopeo|helm[ \t]+registry)[ \t]+login)"
                    rf"(?![\w-])[^\n|;&]{{0,200}}?(?<!\S)(?-i:-p|--password){flag_value}"
                ),
                re.compile(r"(?<![\w-])(?:-u|--user)[ \t]+['\"]?[^\s:'\"]{1,128}:(?P<bare>[^\s'\"@]{1,256})"),
                re.compile(rf"(?<![\w-])(?P<flag>--[A-Za-z][A-Za-z0-9_.-]{{0,63}}){flag_value}"),
            ),
        )

    def find(self, text: str) -> Iterator[Hit]:
        for pattern in self.patterns:
            for match in pattern.finditer(text):
                if "flag" in pattern.groupindex and not self._secret_flag(match.group("flag")):
                    continue
                group = "quoted" if "quoted" in pattern.groupindex and match.group("quoted") else "bare"
                value = match.group(group)
                if value is None or value.startswith("-"):
                    continue
                if _plausible_secret_value(value, quoted=True):
                    yield Hit(match.start(group), match.end(group), self.type)

    def _secret_flag(self, flag: str) -> bool:
        name = flag.lstrip("-")
        if _NOT_A_SECRET_NAME.search(name):
            return False
        return self.names.search(name.replace("-", "_").replace(".", "_")) is not None


_PROSE_PASSWORD = ("password", "passphrase", "passwd", "pwd", "pw", "pin")
_PROSE_KEY = ("secret", "token", "key", "credentials", "credential")


def _plausible_prose_value(word: str, value: str) -> bool:
    """Prose names a secret with words that also mean other things ("the key is the user id"):
    a password needs a digit or a symbol (or 16+ letters of mixed case); a key, token or secret
    needs to look generated (hex of 16+, a UUID, or letters and digits mixed over 16+)."""
    if len(value) < 6 or value[0] in "$<{%/~.[*-" or "(" in value or "[" in value or value.isdigit():
        return False
    if re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", value):
        return False  # a dotted name
    if word in _PROSE_PASSWORD:
        if any(not char.isalpha() for char in value):
            return True
        return len(value) >= 16 and not value.islower() and not value.isupper()
    if re.fullmatch(r"[0-9a-fA-F]{16,}|[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}", value):
        return True
    if re.match(r"(?i)(?:sha\d*|md5):", value):
        return False  # a fingerprint or a checksum
    return (
        len(value) >= 16
        and sum(char.isdigit() for char in value) >= 3
        and any(char.isalpha() for char in value)
        and not re.fullmatch(r"[a-z]+(?:[_-][a-z0-9]+)+", value)  # a snake_case or kebab-case name
    )


@dataclass(frozen=True)
class ProseSecretDetector:
    """Secrets stated in prose: "the staging db password is …", "API key: …", "the token was …".

    The keyword, up to four words, then a verb (``is``, ``was``, ``:``, ``=``, ``set to`` …) and
    the value; every repeat is bounded, so each match costs at most a few words.
    """

    type: str
    pattern: re.Pattern[str] = field(
        default=re.compile(
            r"(?i)(?<![A-Za-z0-9])(?P<word>" + "|".join((*_PROSE_PASSWORD, *_PROSE_KEY)) + r")(?![A-Za-z0-9])"
            r"(?:[ \t]+[\w.@/-]{1,64}){0,4}?[ \t]*"
            r"(?::|=|[ \t](?:is[ \t]+now|is|was|are|were|reads|becomes|now|(?:set|changed|reset)[ \t]+to))"
            r"[ \t]+[`'\"]?(?P<secret>[^\s`'\"]{1,256})"
        ),
        repr=False,
        compare=False,
    )

    def find(self, text: str) -> Iterator[Hit]:
        for match in self.pattern.finditer(text):
            start, end = match.span("secret")
            while end > start and text[end - 1] in ".,;:!?)":
                end -= 1  # the sentence's punctuation
            if _plausible_prose_value(match.group("word").lower(), text[start:end]):
                yield Hit(start, end, self.type)


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
PROSE_SECRET = ProseSecretDetector("secret_prose")
