"""The pipeline's one redaction entry point (pure: no Django, no clock, no I/O).

PLACEHOLDER: until the maintained detector (``powercontext.redaction.redact``) lands, this
module redacts only a few obvious secret shapes with regular expressions (AWS access key ids,
GitHub / OpenAI / Slack tokens, PEM private keys, JWTs, bearer tokens, passwords in connection
strings). It is NOT a complete detector: no high-entropy scan, no provider-specific secrets
beyond these. Every pipeline call site goes through ``redact_text`` so switching to the real
detector is a one-line change here. Each hit becomes ``[REDACTED:<type>]``; nothing about the
secret (not even a hash) is kept.
"""

from __future__ import annotations

import re

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private_key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.DOTALL
        ),
    ),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b")),
    ("openai_key", re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}")),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("bearer_token", re.compile(r"(?i)(?<=bearer )[A-Za-z0-9._~+/=-]{20,}")),
    ("connection_string_password", re.compile(r"(?<=://)[^\s:/@]+:[^\s/@]+(?=@)")),
    (
        "aws_secret_key",
        re.compile(r"(?i)(?<=aws_secret_access_key)(\s*[=:]\s*)[A-Za-z0-9/+=]{40}\b"),
    ),
)


def redact_text(text: str) -> str:
    """``text`` with every detected secret replaced by ``[REDACTED:<type>]``."""
    for name, pattern in _PATTERNS:
        replacement = f"[REDACTED:{name}]"
        if pattern.groups:  # keep the separator the pattern captured, replace the value
            replacement = "\\g<1>" + replacement
        text = pattern.sub(replacement, text)
    return text
