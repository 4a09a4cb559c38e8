"""``{{ text|markdown }}`` and ``{% marked_markdown text "Proposal" field.label %}``: reviewed text as
safe Markdown (``review.markdown``), its hidden characters shown as the same markers as plain text.

The tag, inside a ``{% textmarks_guard %}`` block, records the label of a text whose rendering
holds any such character (see ``review.templatetags.textmarks``), like ``{% marked %}`` does. It
spends at most ``review.markdown.PAGE_BUDGET`` of estimated work per rendered page; once spent,
texts are shown as written (escaped, hidden characters marked) under a short note.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.template.context import Context
from django.utils.safestring import SafeString, mark_safe

from review.markdown import PAGE_BUDGET, cost, render
from review.templatetags.textmarks import marked_html, marker_html, record_marks

register = template.Library()


@register.filter(is_safe=True)
def markdown(value: Any) -> SafeString:
    text = "" if value is None else str(value)
    return mark_safe(render(text, marker_html).html)  # noqa: S308 - rendered with HTML off, then sanitized


_BUDGET = "markdown_budget_left"
_AS_WRITTEN = '<p class="muted small" data-markdown-skipped>Shown as written: this page has no time left to render more Markdown.</p>'


class _Budget:
    def __init__(self) -> None:
        self.left = PAGE_BUDGET


def _budget(context: Context) -> _Budget:
    """The page's budget: kept in the context's bottom layer, which every include shares."""
    budget = context.get(_BUDGET)
    if not isinstance(budget, _Budget):
        budget = context.dicts[0][_BUDGET] = _Budget()
    return budget


@register.simple_tag(takes_context=True)
def marked_markdown(context: Context, value: Any, *label: Any) -> SafeString:
    text = "" if value is None else str(value)
    budget, estimate = _budget(context), cost(text)
    if estimate > budget.left:
        budget.left = 0  # later (maybe cheaper) fields are not rendered either: one cut-off point
        return mark_safe(_AS_WRITTEN + f'<div class="text">{marked_html(context, text, *label)}</div>')  # noqa: S308 - escaped
    budget.left -= estimate
    rendered = render(text, marker_html)
    record_marks(context, rendered.kinds, *label, hidden=rendered.hidden)
    return mark_safe(rendered.html)  # noqa: S308 - rendered with HTML off, then sanitized
