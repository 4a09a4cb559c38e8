"""The secret detectors that need no library (pure: stdlib only): each reports ``Hit`` spans
for ``powercontext.core.redaction.redact`` to replace, and runs in linear time on the bounded
windows ``redact`` hands it (docs/redaction.md)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from powercontext.core.redaction import Detector, Hit


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
