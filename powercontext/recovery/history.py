"""Session history reads: the scope's captured sources whose ``metadata.session_id`` names the
session and that the reader captured (``Source.captured_by`` is its ``owner``), in position order. List (metadata and sizes), literal search within a byte budget and
range read by position with a byte budget.

Sources are redacted once, when captured (``powercontext.memory.sources``), and every row records
the detector version that did it. These reads serve the stored text as it is and never run a
detector: a row stored under an older detector version is served as stored until the background
sweep redacts it again (docs/redaction.md). Sizes are measured in the database
(``ContentBytes``), so listing a session never moves its text, and a search or read moves only
the text it returns or scans, never more than its budget.

The session key is read with one fixed SQL expression per vendor, the same expression the
``recovery_source_session`` index (migration 0002) is built on, so a session's rows are found by
index, not by scanning the scope.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Count, Func, IntegerField, Max, Min, QuerySet
from django.db.models.expressions import RawSQL
from django.db.models.functions import Substr
from django.db.models.sql.compiler import SQLCompiler

from powercontext.core.models import Source
from powercontext.recovery import limits
from powercontext.recovery.text import HintHistory, LineMatch, LineSearch, clip_utf8, safe_label

CONTENT = "content"
_KEY_SQL = {
    "sqlite": "json_extract(metadata, '$.{}')",
    "postgresql": "(metadata ->> '{}')",
}
KIND_MAX_CHARS = 64
WINDOW_MAX_CHARS = 128
# Rows whose text one search fetches at a time (their sizes already fit the budget).
_SEARCH_CHUNK = 32


def metadata_key(name: str) -> RawSQL:
    """``metadata.<name>`` as text; ``name`` is one of this module's fixed key names."""
    assert name in ("session_id", "window_id")
    return RawSQL(_KEY_SQL[connection.vendor].format(name), ())  # noqa: S611 - fixed SQL, no input


class ContentBytes(Func):
    """The UTF-8 size of a text column, computed by the database (no text leaves it)."""

    function = "octet_length"
    output_field = IntegerField()

    def as_sqlite(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra_context: Any
    ) -> tuple[str, tuple[Any, ...]]:
        sql, params = self.as_sql(
            compiler, connection, template="length(CAST(%(expressions)s AS BLOB))", **extra_context
        )
        return sql, tuple(params)


def _session_sources(scope_id: str, session_id: str, owner: str) -> QuerySet[Source]:
    # Only the sources the reader captured: another caller's history of the same session id
    # answers as an unknown session does.
    return (
        Source.objects.filter(scope_id=scope_id, captured_by=owner)
        .annotate(recovery_session=metadata_key("session_id"))
        .filter(recovery_session=session_id, source_type=CONTENT)
    )


def _label(metadata: Any, key: str, max_chars: int) -> str | None:
    value = metadata.get(key) if isinstance(metadata, dict) else None
    return safe_label(value, max_chars) if isinstance(value, str) and value else None


@dataclass(frozen=True)
class HistoryItem:
    source_id: str
    position: int
    kind: str | None
    window_id: str | None
    size_bytes: int  # of the stored (redacted) content
    captured_at: datetime


@dataclass(frozen=True)
class HistoryPage:
    items: list[HistoryItem]
    next_after: int | None  # pass as after_position for the next page; None: no more


_ITEM_FIELDS = ("pk", "source_id", "position", "metadata", "content_bytes", "created_at")


def _items(rows: QuerySet[Source]) -> QuerySet[Source, tuple[Any, ...]]:
    """``rows`` in position order as ``(pk, HistoryItem fields…)`` tuples, sizes from the
    database: no content is read."""
    return rows.annotate(content_bytes=ContentBytes(CONTENT)).order_by("position").values_list(*_ITEM_FIELDS)


def _item(source_id: str, position: int, metadata: Any, size: int, created: datetime) -> HistoryItem:
    return HistoryItem(
        source_id=source_id,
        position=position,
        kind=_label(metadata, "kind", KIND_MAX_CHARS),
        window_id=_label(metadata, "window_id", WINDOW_MAX_CHARS),
        size_bytes=size,
        captured_at=created,
    )


def history_list(
    *, scope_id: str, session_id: str, owner: str, after_position: int = 0, limit: int = 100
) -> HistoryPage:
    """One page of the session's sources after ``after_position``, oldest first: metadata and
    sizes only (the content never leaves the database)."""
    rows = list(
        _items(_session_sources(scope_id, session_id, owner).filter(position__gt=after_position))[: limit + 1]
    )
    more = len(rows) > limit
    items = [_item(sid, pos, meta, size, created) for _pk, sid, pos, meta, size, created in rows[:limit]]
    return HistoryPage(items=items, next_after=items[-1].position if more and items else None)


@dataclass(frozen=True)
class HistoryMatch:
    source_id: str
    position: int
    window_id: str | None
    match: LineMatch


@dataclass(frozen=True)
class HistorySearch:
    """``truncated``: more lines matched than ``search.limit`` (the first ones are returned).
    ``partial``: the scan budget ran out first; the sources after ``next_after`` were not
    searched (pass it as ``after_position`` to go on). Never both."""

    matches: list[HistoryMatch]
    truncated: bool
    partial: bool = False
    next_after: int | None = None
    scanned_bytes: int = 0


def _search_window(rows: QuerySet[Source], budget: int) -> tuple[int | None, int, bool]:
    """The last position of the longest run of ``rows`` (position order) whose sizes fit
    ``budget`` bytes and ``limits.SEARCH_MAX_SOURCES`` rows (always at least one source), the
    bytes in it, and whether sources are left after it. Sizes only: no content is read."""
    sizes = rows.annotate(content_bytes=ContentBytes(CONTENT)).order_by("position")
    last, scanned = None, 0
    for count, (position, size) in enumerate(
        sizes.values_list("position", "content_bytes")[: limits.SEARCH_MAX_SOURCES + 1].iterator(
            chunk_size=500
        )
    ):
        if last is not None and (count == limits.SEARCH_MAX_SOURCES or scanned + size > budget):
            return last, scanned, True
        last, scanned = position, scanned + size
    return last, scanned, False


def history_search(
    *, scope_id: str, session_id: str, owner: str, search: LineSearch, after_position: int = 0
) -> HistorySearch:
    """Lines of the session's stored (redacted) sources after ``after_position`` containing the
    query literally, oldest source first, at most ``search.limit`` (``truncated`` when more
    matched). A secret is never findable: the stored text is redacted. One call reads at most
    ``POWERCONTEXT_RECOVERY_HISTORY_SEARCH_BYTES`` of content (or one source, if that is larger),
    in the database and here; a longer session answers ``partial`` with where to go on."""
    session = _session_sources(scope_id, session_id, owner).filter(position__gt=after_position)
    last, scanned, more = _search_window(session, settings.POWERCONTEXT_RECOVERY_HISTORY_SEARCH_BYTES)
    if last is None:
        return HistorySearch(matches=[], truncated=False)
    rows = session.filter(position__lte=last)
    query = search.query
    # A cheap database pre-filter over the same window that can only drop sources without a
    # match: skipped where the database's LIKE and Python's case folding could disagree.
    if not search.ignore_case:
        rows = rows.filter(content__contains=query)
    elif query.isascii():
        rows = rows.filter(content__icontains=query)
    texts = (
        ((sid, pos, meta), content)
        for sid, pos, meta, content in rows.order_by("position")
        .values_list("source_id", "position", "metadata", CONTENT)
        .iterator(chunk_size=_SEARCH_CHUNK)
    )
    found, truncated = search.first_matches(texts, limits.LINE_MAX_BYTES)
    matches = [
        HistoryMatch(
            source_id=sid, position=pos, window_id=_label(meta, "window_id", WINDOW_MAX_CHARS), match=match
        )
        for (sid, pos, meta), match in found
    ]
    partial = more and not truncated
    return HistorySearch(
        matches=matches,
        truncated=truncated,
        partial=partial,
        next_after=last if partial else None,
        scanned_bytes=scanned,
    )


@dataclass(frozen=True)
class HistoryChunk:
    """One history item of a read with its stored (redacted) content; ``truncated`` when the
    read's byte budget cut the content short (the next read starts at this item)."""

    item: HistoryItem
    content: str
    truncated: bool


@dataclass(frozen=True)
class HistoryRange:
    items: list[HistoryChunk]
    truncated: bool
    next_position: int | None  # the first position not (fully) returned; None: the range is done


def history_read(
    *,
    scope_id: str,
    session_id: str,
    owner: str,
    from_position: int,
    to_position: int | None = None,
    max_bytes: int = 16_000,
) -> HistoryRange:
    """The session's sources with ``from_position <= position <= to_position``, oldest first,
    their stored (redacted) content within ``max_bytes`` UTF-8 bytes in total. The item that does
    not fit is cut at a character boundary and marked ``truncated``; reading stops there. Sizes
    are read first, so only the text returned leaves the database (the cut item's prefix only)."""
    rows = _session_sources(scope_id, session_id, owner).filter(position__gte=from_position)
    if to_position is not None:
        rows = rows.filter(position__lte=to_position)
    whole: list[tuple[int, HistoryItem]] = []
    cut: tuple[int, HistoryItem, int] | None = None  # (pk, item, bytes left for it)
    next_position: int | None = None
    budget = max_bytes
    for pk, sid, pos, meta, size, created in _items(rows)[: limits.READ_MAX_ITEMS + 1]:
        if len(whole) == limits.READ_MAX_ITEMS:
            next_position = pos
            break
        item = _item(sid, pos, meta, size, created)
        if size > budget:
            cut, next_position = (pk, item, budget), pos
            break
        whole.append((pk, item))
        budget -= size
    texts = dict(Source.objects.filter(pk__in=[pk for pk, _item in whole]).values_list("pk", CONTENT))
    chunks = [HistoryChunk(item=item, content=texts[pk], truncated=False) for pk, item in whole]
    if cut is not None and cut[2] > 0:
        pk, item, left = cut
        # A UTF-8 character takes at least one byte: the first ``left`` characters hold the prefix.
        head = Source.objects.filter(pk=pk).values_list(Substr(CONTENT, 1, left), flat=True).get()
        text = clip_utf8(head, left)
        if text:
            chunks.append(HistoryChunk(item=item, content=text, truncated=True))
            next_position = item.position + 1
    return HistoryRange(items=chunks, truncated=next_position is not None, next_position=next_position)


def history_extent(*, scope_id: str, session_id: str, owner: str, max_windows: int) -> HintHistory:
    """How many sources the session has, its first and last positions, and the window ids seen
    (in order of first appearance, at most ``max_windows`` of them): the hint's history part."""
    rows = _session_sources(scope_id, session_id, owner)
    totals = rows.aggregate(count=Count("pk"), first=Min("position"), last=Max("position"))
    if not totals["count"]:
        return HintHistory(count=0, first_position=None, last_position=None, windows=[], window_count=0)
    windows = (
        rows.annotate(window=metadata_key("window_id"))
        .exclude(window=None)
        .values("window")
        .annotate(first=Min("position"))
        .order_by("first", "window")
    )
    seen = [str(w) for w in windows.values_list("window", flat=True)]
    return HintHistory(
        count=totals["count"],
        first_position=totals["first"],
        last_position=totals["last"],
        windows=seen[:max_windows],
        window_count=len(seen),
    )
