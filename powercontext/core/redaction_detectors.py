"""The secret detectors backed by detect-secrets (Yelp), and ``redact(text)`` for the application.

This adapter is the only module that imports the library. It is not pure: importing
``detect_secrets`` runs its package ``__init__``, which loads requests, subprocess and logging and
a process-global settings object, so ``powercontext.core.redaction`` (pure, the replacement logic)
receives these detectors as plain objects instead.

How the library is used, and why not through ``analyze_line``:

- Its provider patterns (each plugin's ``denylist`` of compiled expressions) are run with
  ``finditer``, because ``analyze_string`` yields matched values without positions (and for
  GitHub yields only the capture group, the token prefix), and ``analyze_line`` wraps every value
  in a ``PotentialSecret``, which computes a SHA-1 hash of it: we never hash a secret, and never
  call the plugins' ``verify`` (it sends the secret over the network).
- Its keyword vocabulary (``keyword.DENYLIST``) feeds the keyword-assignment detector; its
  Shannon entropy (``Base64HighEntropyString.calculate_shannon_entropy``) feeds the high-entropy
  detector. Both gates are tuned for prose in ``powercontext.core.redaction``.
- ``JwtTokenDetector.is_formally_valid`` accepts a JWT only when its header and payload decode
  to JSON.
- Not used: ``IPPublicDetector`` (an address is not a secret) and the plugins' line-based quoting
  rules for high-entropy strings (prose has no quotes).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import cast

from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.cloudant import CloudantDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import DENYLIST as SECRET_KEYWORDS
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from powercontext.core import redaction
from powercontext.core.redaction import Detector, Hit, Redacted
from powercontext.core.secret_patterns import CONTEXT_DETECTORS, STRUCTURAL_DETECTORS
from powercontext.core.secret_phrases import (
    PROSE_SECRET,
    CommandLineDetector,
    HighEntropyDetector,
    KeywordAssignmentDetector,
)

# The version of what ``redact`` detects, stored with every captured Source
# (``Source.redaction_version``). Raise it whenever a detector change could redact more: Sources
# stored under an older version are redacted again in the background (docs/redaction.md).
# 1: capture-time redaction with its first detectors; 2: the secret corpus shapes (issue 33).
REDACTION_VERSION = 2

# Bits per character above which a mixed-case, digit-bearing token of 20+ characters made of short
# runs counts as random. The library's default (4.5) is tuned for quoted strings in code and is out
# of reach below ~25 characters; a random 20-character token has about 4.0 bits, so 3.7 catches
# nearly all of them, while the run-length gate in HighEntropyDetector keeps identifiers out
# (tests/pipeline/test_redaction.py pins both sides).
ENTROPY_LIMIT = 3.7

_WORD_TAIL = re.compile(r"[A-Za-z0-9_]+")
_JWT_TAIL = re.compile(r"[A-Za-z0-9_.=-]+")
# Capture groups in these library patterns that hold the secret itself (the rest is context).
# Other plugins' groups are fragments (GitHub's is the prefix), so their whole match is used.
_SECRET_GROUP = {
    BasicAuthDetector,
    CloudantDetector,
    IbmCloudIamDetector,
    IbmCosHmacDetector,
    NpmDetector,
    SoftlayerDetector,
}
_DELIMITERS = frozenset(" \t\r\n\"'=:")
# Secret-named keys the library's list lacks, common in prose, configs and environments
# (searched anywhere in a name: GH_TOKEN, DEPLOY_KEY, SSH_PASSPHRASE, DB_PW).
_EXTRA_KEYWORDS = (
    "(?:access|auth|api|bearer|refresh|session|client)_?token",
    "token$",
    "credentials?",
    "(?:deploy|license|licence|access|signing|encryption|master|webhook|app|consumer|admin|ssh|gpg|pgp|secret)_?key",
    "pass_?phrase",
    "(?:^|_)pw$",
)

_TYPES: dict[type[RegexBasedDetector], str] = {
    ArtifactoryDetector: "artifactory_token",
    AWSKeyDetector: "aws_access_key",
    AzureStorageKeyDetector: "azure_storage_key",
    BasicAuthDetector: "url_password",
    CloudantDetector: "cloudant_credentials",
    DiscordBotTokenDetector: "discord_token",
    GitHubTokenDetector: "github_token",
    GitLabTokenDetector: "gitlab_token",
    IbmCloudIamDetector: "ibm_cloud_iam_key",
    IbmCosHmacDetector: "ibm_cos_hmac_key",
    JwtTokenDetector: "jwt",
    MailchimpDetector: "mailchimp_key",
    NpmDetector: "npm_token",
    OpenAIDetector: "openai_key",
    PrivateKeyDetector: "private_key",
    PypiTokenDetector: "pypi_token",
    SendGridDetector: "sendgrid_key",
    SlackDetector: "slack_token",
    SoftlayerDetector: "softlayer_credentials",
    SquareOAuthDetector: "square_oauth_secret",
    StripeDetector: "stripe_key",
    TelegramBotTokenDetector: "telegram_token",
    TwilioKeyDetector: "twilio_key",
}


@dataclass(frozen=True)
class LibraryPatternDetector:
    """One expression of a library plugin's ``denylist``, reporting spans.

    The secret is the first capture group that matched for the plugins in ``_SECRET_GROUP`` (the
    library's own convention), else the whole match without the delimiters some patterns
    include (Artifactory's leading "=" or space), extended over the token characters that follow
    (the GitHub and JWT patterns are fixed-length or lazy and would leave a tail behind).
    """

    type: str
    pattern: re.Pattern[str]
    grouped: bool = False
    tail: re.Pattern[str] = _WORD_TAIL
    accept: Callable[[str], bool] | None = None

    def find(self, text: str) -> Iterator[Hit]:
        for match in self.pattern.finditer(text):
            start, end = match.span()
            if self.grouped:
                index = next((i for i in range(1, self.pattern.groups + 1) if match.group(i)), 0)
                if not index:
                    continue
                start, end = match.span(index)
            else:
                while start < end and text[start] in _DELIMITERS:
                    start += 1
                while end > start and text[end - 1] in _DELIMITERS:
                    end -= 1
                extension = self.tail.match(text, end)
                if extension is not None:
                    end = extension.end()
            if start < end and (self.accept is None or self.accept(text[start:end])):
                yield Hit(start, end, self.type)


# The IBM, SoftLayer and Cloudant patterns join name and value with "(?: *)(?:=|:|:=|=>| +|::)(?: *)":
# three adjacent repeats of a space, cubic on a long run of spaces after a key-like name (a 2 KB
# line took 80 s). The same language, written so that a run of spaces is read one way only:
_CUBIC_SEPARATOR = "(?: *)(?:=|:|:=|=>| +|::)(?: *)"
_LINEAR_SEPARATOR = "(?: *(?:=|:|:=|=>|::) *| +)"


def _linear(pattern: re.Pattern[str]) -> re.Pattern[str]:
    if _CUBIC_SEPARATOR not in pattern.pattern:
        return pattern
    return re.compile(pattern.pattern.replace(_CUBIC_SEPARATOR, _LINEAR_SEPARATOR), pattern.flags)


def _library_detectors() -> list[Detector]:
    detectors: list[Detector] = []
    for plugin, secret_type in _TYPES.items():
        # denylist is a class attribute typed by the library as an abstract property.
        for library_pattern in cast("Iterable[re.Pattern[str]]", plugin.denylist):
            pattern = _linear(library_pattern)
            kind = secret_type
            if plugin is AWSKeyDetector and pattern.groups:
                kind = "aws_secret_key"
            elif plugin is SlackDetector and "hooks" in pattern.pattern:
                kind = "slack_webhook"
            detectors.append(
                LibraryPatternDetector(
                    kind,
                    pattern,
                    grouped=bool(pattern.groups) and (plugin in _SECRET_GROUP or kind == "aws_secret_key"),
                    tail=_JWT_TAIL if plugin is JwtTokenDetector else _WORD_TAIL,
                    accept=JwtTokenDetector.is_formally_valid if plugin is JwtTokenDetector else None,
                )
            )
    return detectors


# Most specific first: the order breaks ties between overlapping hits (see powercontext.core.redaction).
DETECTORS: tuple[Detector, ...] = (
    *STRUCTURAL_DETECTORS,
    *_library_detectors(),
    *CONTEXT_DETECTORS,
    KeywordAssignmentDetector("secret_keyword", (*SECRET_KEYWORDS, *_EXTRA_KEYWORDS)),
    CommandLineDetector("cli_password", (*SECRET_KEYWORDS, *_EXTRA_KEYWORDS)),
    PROSE_SECRET,
    HighEntropyDetector(
        "high_entropy_string",
        Base64HighEntropyString().calculate_shannon_entropy,
        limit=ENTROPY_LIMIT,
    ),
)


def redact(text: str) -> Redacted:
    """``text`` with every secret replaced by ``[REDACTED:<type>]`` (see powercontext.core.redaction)."""
    return redaction.redact(text, detectors=DETECTORS)
