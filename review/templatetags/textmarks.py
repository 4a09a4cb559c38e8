"""Show reviewed text with its bidirectional controls and invisible characters made visible.

``{{ text|textmarks }}`` escapes the whole text, then replaces each such character (see
``review.textmarks``) with a styled ``⟨U+202E⟩`` marker, so the browser never applies it.
``{% marked text "Proposal" field.label %}`` does the same and, inside a
``{% textmarks_guard %}…{% endtextmarks_guard %}`` block, records the label (its non-empty parts
joined by " · ") so that the block opens with a warning naming every field that holds any.
"""

from __future__ import annotations

import html
from typing import Any

from django import template
from django.template.base import Parser, Token
from django.template.context import Context
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe

from review.textmarks import KIND_LABELS, Mark, has_marks, kinds_in, pieces, plain

register = template.Library()

_FOUND = "textmarks_found"


class _Found:
    """Labels of the rendered texts that hold marked characters, with their kinds, in order."""

    def __init__(self) -> None:
        self.kinds: dict[str, set[str]] = {}
        self.hidden: dict[str, list[str]] = {}

    def record(self, label: str, kinds: frozenset[str], hidden: tuple[str, ...] = ()) -> None:
        self.kinds.setdefault(label, set()).update(kinds)
        if hidden:
            self.hidden.setdefault(label, []).extend(hidden)

    def rows(self) -> list[dict[str, Any]]:
        return [
            {
                "label": label,
                "kinds": [KIND_LABELS[kind] for kind in sorted(kinds)],
                "hidden": "\n".join(self.hidden.get(label, ())),
            }
            for label, kinds in self.kinds.items()
        ]


def marker_html(mark: Mark) -> str:
    """The visible ``⟨U+202E⟩`` marker that stands for ``mark``."""
    # kind and code are fixed ASCII; the Unicode name is letters, digits, spaces and hyphens.
    return (
        f'<span class="textmark textmark-{mark.kind}" title="{mark.code} {html.escape(mark.name)}">'
        f"⟨{mark.code}⟩</span>"
    )


def _html(text: str) -> str:
    """``text`` HTML-escaped, each marked character replaced by its marker."""
    if not has_marks(text):
        return html.escape(text)
    return "".join(
        html.escape(piece) if isinstance(piece, str) else marker_html(piece) for piece in pieces(text)
    )


def render_marked(value: Any) -> SafeString:
    """``value`` as text, HTML-escaped, each marked character replaced by its marker."""
    text = "" if value is None else str(value)
    return mark_safe(_html(text))  # noqa: S308 - _html escapes every character of the text


def marked_html(context: Context, value: Any, *label: Any) -> str:
    """``render_marked(value)`` as a plain (escaped) string; if ``value`` holds marked
    characters, records ``label`` (its non-empty parts joined by " · ") for the enclosing guard.
    The ``marked`` tag, and other tags that render many cells (``review_diff``), use it."""
    text = "" if value is None else str(value)
    if has_marks(text):
        record_marks(context, kinds_in(text), *label)
    return _html(text)


def record_marks(context: Context, kinds: frozenset[str], *label: Any, hidden: tuple[str, ...] = ()) -> None:
    """Record ``label`` (its non-empty parts joined by " · ") as holding ``kinds`` (and the
    ``hidden`` source lines its formatted view does not show) for the enclosing
    ``textmarks_guard``, if any and if ``kinds`` is not empty."""
    found = context.get(_FOUND)
    if kinds and isinstance(found, _Found):
        found.record(" · ".join(str(part) for part in label if part), kinds, hidden)


@register.filter(is_safe=True)
def textmarks(value: Any) -> SafeString:
    return render_marked(value)


@register.filter
def textmarks_plain(value: Any) -> str:
    """For attribute values: each marked character as plain ``⟨U+202E⟩`` text (autoescaped)."""
    return plain("" if value is None else str(value))


@register.simple_tag(takes_context=True)
def marked(context: Context, value: Any, *label: Any) -> SafeString:
    return mark_safe(marked_html(context, value, *label))  # noqa: S308 - marked_html escapes the text


class _GuardNode(template.Node):
    def __init__(self, nodelist: template.NodeList) -> None:
        self.nodelist = nodelist

    def render(self, context: Context) -> str:
        found = _Found()
        with context.push({_FOUND: found}):
            body = self.nodelist.render(context)
        if not found.kinds:
            return body
        banner = render_to_string("review/_textmarks_banner.html", {"found": found.rows()})
        return banner + body


@register.tag
def textmarks_guard(parser: Parser, token: Token) -> _GuardNode:
    nodelist = parser.parse(("endtextmarks_guard",))
    parser.delete_first_token()
    return _GuardNode(nodelist)
