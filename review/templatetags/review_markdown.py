"""``{{ text|markdown }}`` and ``{% marked_markdown text "Proposal" field.label %}``: reviewed text as
safe Markdown (``review.markdown``), its hidden characters shown as the same markers as plain text.

The tag, inside a ``{% textmarks_guard %}`` block, records the label of a text whose rendering
holds any such character (see ``review.templatetags.textmarks``), like ``{% marked %}`` does.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.template.context import Context
from django.utils.safestring import SafeString, mark_safe

from review.markdown import render
from review.templatetags.textmarks import marker_html, record_marks

register = template.Library()


@register.filter(is_safe=True)
def markdown(value: Any) -> SafeString:
    text = "" if value is None else str(value)
    return mark_safe(render(text, marker_html).html)  # noqa: S308 - rendered with HTML off, then sanitized


@register.simple_tag(takes_context=True)
def marked_markdown(context: Context, value: Any, *label: Any) -> SafeString:
    text = "" if value is None else str(value)
    rendered = render(text, marker_html)
    record_marks(context, rendered.kinds, *label)
    return mark_safe(rendered.html)  # noqa: S308 - rendered with HTML off, then sanitized
