"""``{% diff_rows diff left=... right=... where=... where_id=... %}``: the table rows of one field's
side-by-side diff, rendered in Python.

A field may have up to ``review.diff.MAX_DIFF_LINES`` changed lines a side, i.e. two thousand
rows; through the template language (or ``format_html``) each row costs tens of microseconds,
here a few. Every cell's text goes through ``marked_html``: escaped, its hidden characters shown
as markers and recorded for the page's warning.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import template
from django.template.context import Context
from django.utils.safestring import SafeString, mark_safe

from review.diff import FieldDiff, Segment
from review.templatetags.textmarks import marked_html

register = template.Library()


def _cell(context: Context, segments: Iterable[Segment], tag: str, label: tuple[Any, ...]) -> str:
    """One cell's segments, the changed ones inside ``<del>``/``<ins>`` (``tag``)."""
    return "".join(
        f"<{tag}>{marked_html(context, s.text, *label)}</{tag}>"
        if s.changed
        else marked_html(context, s.text, *label)
        for s in segments
    )


def _number(value: int | None) -> str:
    return "" if value is None else str(int(value))


@register.simple_tag(takes_context=True)
def diff_rows(
    context: Context, diff: FieldDiff, *, left: str = "", right: str = "", where: Any = "", where_id: Any = ""
) -> SafeString:
    left_label, right_label = (where, where_id, diff.label, left), (where, where_id, diff.label, right)
    rows = []
    for row in diff.rows:
        if row.kind == "skip":
            lines = "line" if row.skipped == 1 else "lines"
            rows.append(f'<tr class="skip"><td colspan="4">⋯ {int(row.skipped)} unchanged {lines}</td></tr>')
            continue
        if row.kind not in ("equal", "replace", "delete", "insert"):
            raise ValueError("not a row kind of a line diff")
        rows.append(
            f'<tr class="{row.kind}"><td class="ln">{_number(row.left_no)}</td>'
            f'<td class="l">{_cell(context, row.left, "del", left_label)}</td>'
            f'<td class="ln">{_number(row.right_no)}</td>'
            f'<td class="r">{_cell(context, row.right, "ins", right_label)}</td></tr>'
        )
    return mark_safe("\n".join(rows))  # noqa: S308 - kinds are checked, numbers are ints, texts escaped
