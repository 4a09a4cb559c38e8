"""The pipeline's one redaction entry point.

Every pipeline call site (the projection before the generator, every output field after it)
goes through ``redact_text``, which uses the maintained detector (``powercontext.core.redaction`` with
the detect-secrets-backed detectors of ``powercontext.core.redaction_detectors``). Each hit becomes
``[REDACTED:<type>]``; nothing about the secret (not even a hash) is kept.
"""

from __future__ import annotations

from powercontext.core.redaction_detectors import redact


def redact_text(text: str) -> str:
    """``text`` with every detected secret replaced by ``[REDACTED:<type>]``."""
    return redact(text).text
