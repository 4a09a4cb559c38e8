"""Reviewed text rendered as safe Markdown, with its hidden characters still shown as markers.

Pure module: a maintained renderer (markdown-it-py, CommonMark plus tables and strikethrough) with
raw HTML and images turned off, then a maintained sanitizer (nh3) with a strict allow-list:
text-level and block tags only; ``href`` is the one attribute (besides ``start`` on ``ol``) and
only ``http``, ``https`` and ``mailto`` URLs survive (relative ones are dropped), every link gets
``rel="nofollow noopener noreferrer"``; no images, no classes, no styles, no ids. Whatever the
text holds (``<script>``, ``javascript:`` links, ``onerror=`` attributes, entities) comes out as
inert text or not at all.

The sanitized HTML's text then goes through the same marking as plain text (``review.textmarks``):
each bidirectional control or invisible character, including one the renderer produced from an
entity such as ``&#x202E;``, is replaced by the marker the caller renders, so the rendered view
never applies it. ``render`` returns the HTML and the kinds of marked characters it holds.

Rendering is linear but costs up to ~20 µs for some characters (each ``[`` tries a link, each line
runs the block rules), so a page full of maximum-length adversarial fields would take seconds.
``cost`` estimates the work from character counts; pages spend at most ``PAGE_BUDGET`` of it and
show the remaining fields as written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import nh3
from markdown_it import MarkdownIt

from review.textmarks import Mark, has_marks, kinds_in, pieces

ALLOWED_TAGS = frozenset(
    {
        "p", "br", "hr", "strong", "em", "del", "s", "code", "pre", "blockquote",
        "ul", "ol", "li", "a", "h1", "h2", "h3", "h4", "h5", "h6",
        "table", "thead", "tbody", "tr", "th", "td",
    }
)  # fmt: skip
ALLOWED_SCHEMES = frozenset({"http", "https", "mailto"})
LINK_REL = "nofollow noopener noreferrer"

_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False, "breaks": True})
_md.enable(["table", "strikethrough"])
# An image would make the reviewer's browser load a URL the proposal chose: ![alt](url) stays a
# "!" followed by an ordinary (checked) link.
_md.disable("image")

_cleaner = nh3.Cleaner(
    tags=set(ALLOWED_TAGS),
    clean_content_tags={"script", "style"},
    attributes={"a": {"href"}, "ol": {"start"}},
    url_schemes=set(ALLOWED_SCHEMES),
    url_relative="deny",
    link_rel=LINK_REL,
    strip_comments=True,
)

# Estimated microseconds per character (measured on one shared core, rounded up): most text
# costs little; these cost more.
_COSTLY = {"[": 20, "\n": 20, "*": 12, "_": 12, "]": 4, "<": 4, "&": 4, "!": 3, "#": 3, "\\": 3, ":": 3}
# The estimated work one page may spend on Markdown (about 60 ms; a real proposal needs a tenth).
PAGE_BUDGET = 60_000


def cost(text: str) -> int:
    """An upper estimate of ``render``'s work for ``text``, in microseconds."""
    return len(text) + sum(weight * text.count(char) for char, weight in _COSTLY.items())


# A start or end tag of the sanitizer's output (attribute values are quoted), or a run of text.
_TAG = re.compile(r"""<(?:[^>"']|"[^"]*"|'[^']*')*>""")


@dataclass(frozen=True)
class Rendered:
    """Sanitized HTML (safe to insert as is) and the marked-character kinds its text holds."""

    html: str
    kinds: frozenset[str]


def _mark_text(text: str, marker: Callable[[Mark], str]) -> str:
    # ``text`` is already HTML (entities escaped); only the marked characters are replaced.
    return "".join(piece if isinstance(piece, str) else marker(piece) for piece in pieces(text))


def render(text: str, marker: Callable[[Mark], str]) -> Rendered:
    """``text`` as sanitized Markdown HTML whose marked characters are ``marker(mark)`` (which
    must return HTML holding no marked character)."""
    html = _cleaner.clean(_md.render(text))
    if not has_marks(html):
        return Rendered(html=html, kinds=frozenset())
    kinds: set[str] = set()
    out: list[str] = []
    position = 0
    for tag in _TAG.finditer(html):
        chunk = html[position : tag.start()]
        if chunk:
            kinds.update(kinds_in(chunk))
            out.append(_mark_text(chunk, marker))
        # Tags keep their characters: the only attribute values left are hrefs, which the
        # renderer percent-encodes, and ``start`` numbers.
        out.append(tag.group())
        position = tag.end()
    tail = html[position:]
    kinds.update(kinds_in(tail))
    out.append(_mark_text(tail, marker))
    return Rendered(html="".join(out), kinds=frozenset(kinds))
