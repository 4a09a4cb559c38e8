"""The secret detectors that read words around a value (pure: stdlib only): secret-named
assignments, command-line password flags, passwords in prose, and random-looking tokens. The
keyword vocabulary and the entropy function come from ``powercontext.core.redaction_detectors``;
every detector runs in linear time on the bounded windows ``redaction.redact`` hands it."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from powercontext.core.redaction import Hit


def _plausible_secret_value(value: str, quoted: bool) -> bool:
    """Whether the value of a secret-named assignment looks like a secret, not a reference."""
    if len(value) < (4 if quoted else 6):
        return False
    if value[0] in "$<{%/~.[*-":
        return False  # ${VAR}, <placeholder>, %s, paths, settings.X, ***, a flag
    if quoted:
        # A quoted string is a literal: brackets inside are characters of the secret (Django's
        # generated keys hold them), unless the string is code (``"get_secret('db')"``).
        return _CODE.match(value) is None
    if "(" in value or "[" in value:
        return False  # os.environ[...], a call
    if value.isdigit() or re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", value):
        return False  # a number (a timeout, a size) or a dotted name (a class, a setting)
    if re.fullmatch(r"[a-z]+(?:[-_][a-z]+)+", value):
        return False  # lower-case words joined by - or _: the name of a secret, not one
    return len(value) >= 12 or any(not char.isalpha() for char in value)


_CODE = re.compile(r"[A-Za-z_][\w.]*[(\[]")

# Names of a password that may be a passphrase of plain words (``password: correct horse battery
# staple``): three to eight lower-case words, the rest of the line, none of them a word that prose
# about a password uses ("password: reset it in settings", "password: must be 12 characters").
_PASSPHRASE_NAME = re.compile(r"(?i)(?:pass(?:word|phrase|wd)?|pwd)$")
_PASSPHRASE_LINE = 160
_NOT_PASSPHRASE_WORDS = frozenset(
    """a about above after again all also am an and any are as ask at be been before being below by
    can cannot change changed changes check contact could did do does done each empty enter entered
    expired expires for from get given go had has have here how if in into is it its just least
    leave like long longer make manager may more most must my need needed needs never new no none
    nor not now null of off old on once one only or other our out over please policy provided
    required reset rotated same see sent set should so some stored than that the their them then
    there these they this to too under unknown unset until up use used user using vault very via
    was we were what when where which while who will with without you your""".split()
)


def _passphrase_end(text: str, start: int) -> int:
    """The end of a passphrase of plain words from ``start`` to the end of its line, else -1."""
    end = text.find("\n", start, start + _PASSPHRASE_LINE + 1)
    if end < 0:
        if len(text) - start > _PASSPHRASE_LINE:
            return -1
        end = len(text)
    phrase = text[start:end].rstrip()
    words = phrase.split(" ")
    if not 3 <= len(words) <= 8:
        return -1
    if not all(
        2 <= len(w) <= 24 and w.isalpha() and w.islower() and w not in _NOT_PASSPHRASE_WORDS for w in words
    ):
        return -1
    return start + len(phrase)


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
            elif group == "bare" and _PASSPHRASE_NAME.search(match.group("name")):
                end = _passphrase_end(text, value.start(group))
                if end > 0:
                    yield Hit(value.start(group), end, self.type)


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
# Digests and inline media, public by nature: ``"integrity": "sha512-…"`` and ``data:image/png;base64,…``.
_SUBRESOURCE_INTEGRITY = re.compile(r"sha(?:256|384|512)-")
_MEDIA_DATA_URL = re.compile(r"data:(?:image|font|audio|video)/[\w.+-]{1,64};base64,\Z")


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
            if _SUBRESOURCE_INTEGRITY.match(token) or _MEDIA_DATA_URL.search(
                text, max(match.start() - 64, 0), match.start()
            ):
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


PROSE_SECRET = ProseSecretDetector("secret_prose")
