"""The secret detectors that need no library (pure: stdlib only): each reports ``Hit`` spans
for ``powercontext.core.redaction.redact`` to replace, and runs in linear time on the bounded
windows ``redact`` hands it (docs/redaction.md)."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

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


# Provider tokens known by their prefix that the library lacks. One expression: the alternative
# that matched names the type. Every repeat is bounded and each alternative starts with a literal
# prefix (the Azure and Terraform ones with a bounded run before it), so a match attempt costs at
# most a few hundred characters wherever it starts.
_PROVIDER_TOKENS: tuple[tuple[str, str], ...] = (
    ("anthropic_key", r"sk-ant-(?:api|admin)[0-9]{2}-[A-Za-z0-9_-]{80,160}"),
    ("huggingface_token", r"hf_[A-Za-z]{30,40}"),
    ("digitalocean_token", r"do[opr]_v1_[a-f0-9]{64}"),
    ("shopify_token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    ("stripe_webhook_secret", r"whsec_[A-Za-z0-9+/]{32,88}"),
    ("google_api_key", r"AIza[0-9A-Za-z_-]{35}"),
    ("google_oauth_secret", r"GOCSPX-[A-Za-z0-9_-]{28}"),
    ("azure_client_secret", r"[A-Za-z0-9_.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}"),
    ("vault_token", r"hv[sbr]\.[A-Za-z0-9_-]{24,256}"),
    ("age_secret_key", r"AGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{58}"),
    ("linear_key", r"lin_(?:api|oauth)_[A-Za-z0-9]{40}"),
    ("notion_token", r"secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{46}"),
    ("postman_key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("newrelic_key", r"NRAK-[A-Z0-9]{27}"),
    ("grafana_token", r"glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}|glc_[A-Za-z0-9+/]{32,400}={0,2}"),
    ("databricks_token", r"dapi[a-f0-9]{32}(?:-[0-9])?"),
    ("supabase_token", r"sbp_(?:v0_)?[a-f0-9]{40}"),
    ("doppler_token", r"dp\.(?:st|ct|sa|pt|scim|audit)\.(?:[a-z0-9_-]{1,32}\.)?[A-Za-z0-9]{40,44}"),
    ("pulumi_token", r"pul-[a-f0-9]{40}"),
    ("groq_key", r"gsk_[A-Za-z0-9]{52}"),
    ("replicate_token", r"r8_[A-Za-z0-9]{37}"),
    ("sentry_token", r"sntry[su]_[A-Za-z0-9+/=_-]{40,400}"),
    ("terraform_token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,100}"),
    ("mailgun_key", r"key-[a-f0-9]{32}"),
)


@dataclass(frozen=True)
class ProviderTokenDetector:
    """Tokens of the providers in ``tokens`` (``(type, expression)``), whole, each between
    non-token characters; the alternative that matched names the type."""

    tokens: tuple[tuple[str, str], ...] = _PROVIDER_TOKENS
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        alternatives = "|".join(f"(?P<t{i}>{expression})" for i, (_, expression) in enumerate(self.tokens))
        object.__setattr__(
            self, "pattern", re.compile(rf"(?<![A-Za-z0-9_.~+/-])(?:{alternatives})(?![A-Za-z0-9_~+/=-])")
        )

    def find(self, text: str) -> Iterator[Hit]:
        for match in self.pattern.finditer(text):
            index = int((match.lastgroup or "t0")[1:])
            yield Hit(match.start(), match.end(), self.tokens[index][0])


PROVIDER_TOKENS = ProviderTokenDetector()

# The token of a Discord webhook URL (the numeric id before it stays readable).
DISCORD_WEBHOOK = PatternDetector(
    "discord_webhook",
    re.compile(
        r"https?://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/"
        r"(?P<secret>[A-Za-z0-9_-]{60,80})(?![A-Za-z0-9_-])"
    ),
)

# A raw 256-bit key in hex named as a private key ("wallet private key 0x…", "PRIVATE_KEY: …").
HEX_PRIVATE_KEY = PatternDetector(
    "private_key",
    re.compile(
        r"(?i)private[ _-]?key[\"']?[ \t]{0,4}(?:[:=]|is)?[ \t]{0,4}[\"']?"
        r"(?P<secret>(?:0x)?[0-9a-f]{64})(?![0-9a-z])"
    ),
)

# One ~/.pgpass line, host:port:database:user:password, alone on its line; database and user start
# like PostgreSQL names (or are "*"), so times and IPv6 addresses are not read as one.
PGPASS_LINE = PatternDetector(
    "pgpass_password",
    re.compile(
        r"(?m)^[ \t]*(?:[A-Za-z0-9.-]{1,253}|\*|\[[0-9A-Fa-f:.]{2,45}\]):(?:[0-9]{1,5}|\*)"
        r":(?:[A-Za-z_][^\s:]{0,62}|\*):(?:[A-Za-z_][^\s:]{0,62}|\*):(?P<secret>\S{1,256})[ \t]*\r?$"
    ),
    accept=lambda value: not value.isdigit(),
)

_NETRC_VALUE = re.compile(r"password[ \t]+(?P<secret>[^\s]{1,256})")
_NETRC_ENTRY = re.compile(r"(?<!\S)(?:machine|default)(?!\S)")
_NETRC_KEYS = frozenset(("login", "account", "port"))


@dataclass(frozen=True)
class NetrcDetector:
    """The password of a ``.netrc`` entry, on one line or several: ``machine host login user
    password SECRET`` or ``default login user password SECRET``. Every word from the entry's
    ``machine``/``default`` (at most ``lookback`` characters back) to ``password`` must be a netrc
    token pair, so prose that says "machine", "login" and "password" is left alone.

    An entry spans lines, so the detector reads the whole text (a window border could fall
    inside an entry) the way the PEM scanner does: ``password`` is found with ``str.find`` and
    every expression call is bounded to ``lookback`` characters before it and one value after.
    """

    type: str
    lookback: int = 512
    whole_text: bool = True

    def find(self, text: str) -> Iterator[Hit]:
        position = 0
        while (found := text.find("password", position)) >= 0:
            position = found + len("password")
            if found and not text[found - 1].isspace():
                continue
            value = _NETRC_VALUE.match(text, found, min(found + len("password") + 288, len(text)))
            if value is None:
                continue
            # The last entry that starts before this password.
            entries = deque(_NETRC_ENTRY.finditer(text, max(found - self.lookback, 0), found), maxlen=1)
            entry = entries[0] if entries else None
            if entry is not None and _netrc_entry(text[entry.start() : found].split()):
                yield Hit(value.start("secret"), value.end("secret"), self.type)


def _netrc_entry(words: list[str]) -> bool:
    pairs = words[2:] if words[0] == "machine" else words[1:]
    if words[0] == "machine" and len(words) < 2:
        return False
    return len(pairs) % 2 == 0 and all(key in _NETRC_KEYS for key in pairs[::2])


_COOKIE_HEADER = re.compile(
    r"(?i)(?<![\w-])(?:(?P<set>set-)?cookie[ \t]*:|(?-i:-b|--cookie)(?=[ \t]+['\"]?[^=\s'\"]{1,128}=))[ \t]*['\"]?"
)
_COOKIE_PAIR = re.compile(r"[ \t]*(?P<name>[^=;,\s'\"]{1,128})=(?P<value>[^;,\s'\"]{1,4096})")


@dataclass(frozen=True)
class CookieDetector:
    """Cookie values in ``Cookie:`` headers (every pair), ``Set-Cookie:`` headers (the first pair,
    the rest are attributes) and ``curl -b``/``--cookie``: a value of 8+ characters with a digit,
    or of 16+, is a session or token; ``theme=dark`` stays. Each character is read by at most one
    header's pair scan (a header inside a scanned run is skipped), so the work is linear."""

    type: str

    def find(self, text: str) -> Iterator[Hit]:
        scanned = 0
        for header in _COOKIE_HEADER.finditer(text):
            if header.start() < scanned:
                continue
            position = header.end()
            while (pair := _COOKIE_PAIR.match(text, position)) is not None:
                value = pair.group("value")
                if len(value) >= 16 or (len(value) >= 8 and any(char.isdigit() for char in value)):
                    yield Hit(pair.start("value"), pair.end("value"), self.type)
                position = pair.end()
                if header.group("set") or not text.startswith(";", position):
                    break
                position += 1
            scanned = position


NETRC_PASSWORD = NetrcDetector("netrc_password")
COOKIE = CookieDetector("cookie")


# The library-free detectors, most specific first (their order breaks ties between overlapping
# hits). The keyword and entropy detectors need the library's vocabulary and entropy function and
# are built in powercontext.core.redaction_detectors.
STRUCTURAL_DETECTORS: tuple[Detector, ...] = (
    PEM_PRIVATE_KEY,
    GITHUB_TOKEN,
    PROVIDER_TOKENS,
    DISCORD_WEBHOOK,
    AWS_SECRET_KEY,
    HEX_PRIVATE_KEY,
    URL_PASSWORD,
    OPENAI_KEY,
    BEARER_TOKEN,
)

# Values known by the file or header they stand in (.netrc, .pgpass, cookies): after the token
# detectors, so a JWT or a provider token in such a place keeps its own name.
CONTEXT_DETECTORS: tuple[Detector, ...] = (NETRC_PASSWORD, PGPASS_LINE, COOKIE)
