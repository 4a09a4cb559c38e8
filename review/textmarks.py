"""Invisible and direction-changing characters in reviewed text, found and split out.

Pure module: standard library only. A bidirectional control (U+202A..U+202E, U+2066..U+2069,
U+200E, U+200F, U+061C) makes a browser show text in another order than the one agents will
receive; a zero-width or other invisible character (U+200B..U+200D, U+2060, U+FEFF, the invisible
operators U+2061..U+2064, the deprecated format controls U+206A..U+206F and the tag characters
U+E0000..U+E007F, which language models read although nothing is drawn) hides content outright.
The Review Inbox shows each such character as a visible marker instead of its effect
(``pieces``), and warns about the fields that hold any (``kinds_in``).

Which characters are marked is decided by Unicode property, not by a hand list (issue 20, N5):
every ``Default_Ignorable_Code_Point`` (soft hyphen, combining grapheme joiner, Hangul fillers,
Mongolian vowel separator, variation selectors U+FE00..U+FE0F and U+E0100..U+E01EF, tags …) and
every character of the categories Cf, Zl and Zp (``powercontext.core.invisible``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from powercontext.core.invisible import hidden_pattern

BIDI = "bidi"
INVISIBLE = "invisible"
# Not a character kind: a field whose rendered Markdown does not show part of its text.
HIDDEN_TEXT = "hidden_text"
KIND_LABELS = {
    BIDI: "bidirectional control characters",
    INVISIBLE: "zero-width or invisible characters",
    HIDDEN_TEXT: "text the formatted view does not show",
}

_BIDI_CHARS = "\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c"
_BIDI = re.compile(f"[{_BIDI_CHARS}]")


@dataclass(frozen=True)
class Mark:
    """One bidirectional control or invisible character."""

    char: str

    @property
    def kind(self) -> str:
        return BIDI if _BIDI.match(self.char) else INVISIBLE

    @property
    def code(self) -> str:
        """``U+202E``: what the marker shows."""
        return f"U+{ord(self.char):04X}"

    @property
    def name(self) -> str:
        """The Unicode name, e.g. ``RIGHT-TO-LEFT OVERRIDE`` (empty for an unassigned tag)."""
        return unicodedata.name(self.char, "")


def has_marks(text: str) -> bool:
    return hidden_pattern().search(text) is not None


def kinds_in(text: str) -> frozenset[str]:
    """The kinds of marked characters ``text`` holds (``BIDI``, ``INVISIBLE``); empty if none."""
    return frozenset(Mark(char).kind for char in set(hidden_pattern().findall(text)))


def plain(text: str) -> str:
    """``text`` with each marked character replaced by its code in brackets (``⟨U+202E⟩``): for
    places that take plain text only, such as attribute values."""
    return hidden_pattern().sub(lambda match: f"⟨{Mark(match.group()).code}⟩", text)


def pieces(text: str) -> list[str | Mark]:
    """``text`` as its runs of ordinary text (non-empty strings) and one ``Mark`` per marked
    character, in order: joining the strings and the marks' characters gives ``text`` back."""
    out: list[str | Mark] = []
    start = 0
    for match in hidden_pattern().finditer(text):
        if match.start() > start:
            out.append(text[start : match.start()])
        out.append(Mark(match.group()))
        start = match.end()
    if start < len(text):
        out.append(text[start:])
    return out
