"""Characters that draw nothing, by Unicode property (pure: stdlib only).

``Default_Ignorable_Code_Point`` is a derived property that ``unicodedata`` does not expose, so
it is derived here the way Unicode's DerivedCoreProperties.txt defines it::

    Other_Default_Ignorable_Code_Point + General_Category=Cf + Variation_Selector
      - White_Space - U+FFF9..U+FFFB - U+13430..U+1343F - Prepended_Concatenation_Mark

General_Category comes from ``unicodedata`` (the Python build's Unicode version); the three
binary properties that ``unicodedata`` lacks are the small, stable range sets of PropList.txt
below. ``hidden`` adds the line and paragraph separators (Zl, Zp). The sets are computed once, on
first use, by walking every code point (about 0.1 s); ``is_default_ignorable`` and
``is_hidden`` answer for one character without that walk.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

# PropList.txt, Other_Default_Ignorable_Code_Point (Unicode 14-15).
_OTHER_DEFAULT_IGNORABLE = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x2065, 0x2065),
    (0x3164, 0x3164),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0xE0000, 0xE0000),
    (0xE0002, 0xE001F),
    (0xE0080, 0xE00FF),
    (0xE01F0, 0xE0FFF),
)
# PropList.txt, Variation_Selector.
_VARIATION_SELECTOR = ((0x180B, 0x180D), (0x180F, 0x180F), (0xFE00, 0xFE0F), (0xE0100, 0xE01EF))
# PropList.txt, Prepended_Concatenation_Mark (format characters that are drawn).
_PREPENDED_CONCATENATION_MARK = (
    (0x0600, 0x0605),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
)
# The interlinear annotation and Egyptian hieroglyph format controls are drawn.
_DRAWN_FORMAT = ((0xFFF9, 0xFFFB), (0x13430, 0x1343F))


def _in(code: int, ranges: tuple[tuple[int, int], ...]) -> bool:
    return any(low <= code <= high for low, high in ranges)


def is_default_ignorable(char: str) -> bool:
    """Whether ``char`` has the Default_Ignorable_Code_Point property."""
    code = ord(char)
    if _in(code, _OTHER_DEFAULT_IGNORABLE) or _in(code, _VARIATION_SELECTOR):
        return not char.isspace()
    if unicodedata.category(char) != "Cf" or char.isspace():
        return False
    return not (_in(code, _DRAWN_FORMAT) or _in(code, _PREPENDED_CONCATENATION_MARK))


def is_hidden(char: str) -> bool:
    """Default-ignorable, or a format (Cf), line separator (Zl) or paragraph separator (Zp)."""
    return is_default_ignorable(char) or unicodedata.category(char) in ("Cf", "Zl", "Zp")


def _codes_of(ranges: tuple[tuple[int, int], ...]) -> set[int]:
    return {code for low, high in ranges for code in range(low, high + 1)}


@cache
def _categories() -> dict[str, frozenset[int]]:
    """Every code point of the categories Cf, Zl and Zp (one walk over the code space)."""
    found: dict[str, set[int]] = {"Cf": set(), "Zl": set(), "Zp": set()}
    category = unicodedata.category
    for code in range(0x110000):
        kind = category(chr(code))
        if kind in found:
            found[kind].add(code)
    return {kind: frozenset(codes) for kind, codes in found.items()}


def _default_ignorable_codes() -> set[int]:
    codes = (_codes_of(_OTHER_DEFAULT_IGNORABLE) | _codes_of(_VARIATION_SELECTOR) | _categories()["Cf"]) - (
        _codes_of(_DRAWN_FORMAT) | _codes_of(_PREPENDED_CONCATENATION_MARK)
    )
    return {code for code in codes if not chr(code).isspace()}


def _class(codes: set[int]) -> str:
    """A regular-expression character class of ``codes``."""
    ranges: list[list[int]] = []
    for code in sorted(codes):
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    parts = (re.escape(chr(low)) + ("-" + re.escape(chr(high)) if high > low else "") for low, high in ranges)
    return "[" + "".join(parts) + "]"


@cache
def default_ignorable_pattern() -> re.Pattern[str]:
    """Matches one default-ignorable character."""
    return re.compile(_class(_default_ignorable_codes()))


@cache
def hidden_pattern() -> re.Pattern[str]:
    """Matches one character ``is_hidden`` accepts."""
    categories = _categories()
    return re.compile(
        _class(_default_ignorable_codes() | categories["Cf"] | categories["Zl"] | categories["Zp"])
    )


def strip_default_ignorable(text: str) -> tuple[str, list[int] | None]:
    """``text`` without its default-ignorable characters, and for each kept character its index
    in ``text`` followed by ``len(text)`` (None when nothing was removed: the identity)."""
    pattern = default_ignorable_pattern()
    if pattern.search(text) is None:
        return text, None
    kept: list[str] = []
    index: list[int] = []
    cursor = 0
    for match in pattern.finditer(text):
        kept.append(text[cursor : match.start()])
        index.extend(range(cursor, match.start()))
        cursor = match.end()
    kept.append(text[cursor:])
    index.extend(range(cursor, len(text) + 1))
    return "".join(kept), index
