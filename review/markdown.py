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

What the reviewer sees is what agents get (issue 20, N3). Agents receive the source text, so
Markdown that hides part of it is flagged: each link's destination is shown after the link text
(when it differs from it); link titles and ``title``/``lang`` attributes are dropped; and any word
of the source that the rendered text does not show (a reference definition such as
``[//]: # (…)``, a link title, a code fence's info string after its language, anything else the
renderer drops) makes ``render`` report ``HIDDEN_TEXT`` with the source lines that hold them, which
the page shows in its warning banner. Words are compared as multisets of alphanumeric runs, so
punctuation the Markdown consumes (``*``, ``#``, ``[``, a backslash) is not "hidden".

Rendering is linear but costs up to ~20 µs for some characters (each ``[`` tries a link, each line
runs the block rules), so a page full of maximum-length adversarial fields would take seconds.
``cost`` estimates the work from character counts; pages spend at most ``PAGE_BUDGET`` of it and
show the remaining fields as written.
"""

from __future__ import annotations

import html as html_lib
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token

from review.textmarks import HIDDEN_TEXT, Mark, has_marks, kinds_in, pieces

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
    # nh3 keeps title and lang on every tag whatever ``attributes`` says: a title is text the
    # page hides (shown only on hover), so both go.
    attribute_filter=lambda _element, attribute, value: None if attribute in ("title", "lang") else value,
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
    """Sanitized HTML (safe to insert as is), the flag kinds its text holds (marked characters,
    ``HIDDEN_TEXT``) and, when text is hidden, the source lines that hold it."""

    html: str
    kinds: frozenset[str]
    hidden: tuple[str, ...] = ()


def _mark_text(text: str, marker: Callable[[Mark], str]) -> str:
    # ``text`` is already HTML (entities escaped); only the marked characters are replaced.
    return "".join(piece if isinstance(piece, str) else marker(piece) for piece in pieces(text))


_WORD = re.compile(r"[^\W_]+")
_LANGUAGE = re.compile(r"[\w+#.-]{1,32}")
HIDDEN_LINES = 20


def _words(text: str) -> Counter[str]:
    return Counter(_WORD.findall(text))


def _show_destinations(tokens: list[Token]) -> list[str]:
    """Drop link titles and show each link's destination after the link (unless the text already
    is the destination); return what is shown outside the HTML text (list numbers, languages)."""
    extra: list[str] = []
    for token in tokens:
        if token.type == "list_item_open" and token.info:
            extra.append(token.info)
        if token.type == "fence":
            language = _LANGUAGE.match(token.info.strip())
            if language is not None:
                extra.append(language.group())
        if token.children is None:
            continue
        children: list[Token] = []
        opened: list[tuple[str, list[str]]] = []
        for child in token.children:
            children.append(child)
            if child.type == "link_open":
                child.attrs.pop("title", None)
                opened.append((_md.normalizeLinkText(str(child.attrs.get("href", ""))), []))
            elif opened and child.type in ("text", "code_inline"):
                opened[-1][1].append(child.content)
            elif child.type == "link_close" and opened:
                destination, texts = opened.pop()
                if destination and "".join(texts).strip() != destination:
                    shown = Token("text", "", 0)
                    shown.content = f" ({destination})"
                    children.append(shown)
        token.children = children
    return extra


def _hidden_lines(text: str, html: str, extra: list[str]) -> tuple[str, ...]:
    visible = html_lib.unescape(_TAG.sub(" ", html))
    missing = _words(text) - _words(visible) - _words(" ".join(extra))
    if not missing:
        return ()
    lines = [line for line in text.splitlines() if any(word in missing for word in _WORD.findall(line))]
    return tuple(lines[:HIDDEN_LINES])


def hidden_text(text: str) -> tuple[str, ...]:
    """The source lines of ``text`` holding words its rendered Markdown does not show (empty:
    everything shows). Used where a page is not rendered, such as bulk approval."""
    env: dict[str, object] = {}
    tokens = _md.parse(text, env)
    extra = _show_destinations(tokens)
    html = _cleaner.clean(_md.renderer.render(tokens, _md.options, env))
    return _hidden_lines(text, html, extra)


def render(text: str, marker: Callable[[Mark], str]) -> Rendered:
    """``text`` as sanitized Markdown HTML whose marked characters are ``marker(mark)`` (which
    must return HTML holding no marked character)."""
    env: dict[str, object] = {}
    tokens = _md.parse(text, env)
    extra = _show_destinations(tokens)
    html = _cleaner.clean(_md.renderer.render(tokens, _md.options, env))
    hidden = _hidden_lines(text, html, extra)
    flags = frozenset({HIDDEN_TEXT}) if hidden else frozenset()
    if not has_marks(html):
        return Rendered(html=html, kinds=flags, hidden=hidden)
    kinds: set[str] = set(flags)
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
    return Rendered(html="".join(out), kinds=frozenset(kinds), hidden=hidden)
