"""Session history reads: the scope's captured sources whose ``metadata.session_id`` names the
session and that the reader captured (``Source.captured_by`` is its ``owner``), in position order. List (metadata), literal search and range read by position with a
byte budget; content is redacted exactly as the pipeline redacts what becomes Memory
(``powercontext.core.redaction_detectors``) before anything is returned or searched.

The session key is read with one fixed SQL expression per vendor, the same expression the
``recovery_source_session`` index (migration 0002) is built on, so a session's rows are found by
index, not by scanning the scope.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Count, Max, Min, QuerySet
from django.db.models.expressions import RawSQL

from powercontext.core.models import Source
from powercontext.core.redaction_detectors import redact
from powercontext.recovery import limits
from powercontext.recovery.text import HintHistory, LineMatch, LineSearch, clip_utf8, safe_label, utf8_size

CONTENT = "content"
_KEY_SQL = {
    "sqlite": "json_extract(metadata, '$.{}')",
    "postgresql": "(metadata ->> '{}')",
}
KIND_MAX_CHARS = 64
WINDOW_MAX_CHARS = 128


def metadata_key(name: str) -> RawSQL:
    """``metadata.<name>`` as text; ``name`` is one of this module's fixed key names."""
    assert name in ("session_id", "window_id")
    return RawSQL(_KEY_SQL[connection.vendor].format(name), ())  # noqa: S611 - fixed SQL, no input


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
    size_bytes: int  # of the redacted content
    captured_at: datetime


@dataclass(frozen=True)
class HistoryPage:
    items: list[HistoryItem]
    next_after: int | None  # pass as after_position for the next page; None: no more


def _item(source_id: str, position: int, metadata: Any, content: str, created: datetime) -> HistoryItem:
    return HistoryItem(
        source_id=source_id,
        position=position,
        kind=_label(metadata, "kind", KIND_MAX_CHARS),
        window_id=_label(metadata, "window_id", WINDOW_MAX_CHARS),
        size_bytes=utf8_size(content),
        captured_at=created,
    )


def history_list(
    *, scope_id: str, session_id: str, owner: str, after_position: int = 0, limit: int = 100
) -> HistoryPage:
    """One page of the session's sources after ``after_position``, oldest first."""
    rows = list(
        _session_sources(scope_id, session_id, owner)
        .filter(position__gt=after_position)
        .order_by("position")
        .values_list("source_id", "position", "metadata", "content", "created_at")[: limit + 1]
    )
    more = len(rows) > limit
    items = [
        _item(sid, pos, meta, redact(content).text, created)
        for sid, pos, meta, content, created in rows[:limit]
    ]
    return HistoryPage(items=items, next_after=items[-1].position if more and items else None)


@dataclass(frozen=True)
class HistoryMatch:
    source_id: str
    position: int
    window_id: str | None
    match: LineMatch


@dataclass(frozen=True)
class HistorySearch:
    matches: list[HistoryMatch]
    truncated: bool


def _redacted_rows(rows: QuerySet[Source]) -> Iterator[tuple[str, int, Any, str, datetime]]:
    for sid, pos, meta, content, created in rows.values_list(
        "source_id", "position", "metadata", "content", "created_at"
    ).iterator(chunk_size=200):
        yield sid, pos, meta, redact(content).text, created


def history_search(*, scope_id: str, session_id: str, owner: str, search: LineSearch) -> HistorySearch:
    """Lines of the session's (redacted) sources containing the query literally, oldest source
    first, at most ``search.limit`` (``truncated`` when more matched). A secret is never
    findable: the match runs on the redacted text."""
    query = search.query
    rows = _session_sources(scope_id, session_id, owner).order_by("position")
    # A cheap database pre-filter that can only drop sources without a match: skipped where the
    # database's LIKE and Python's case folding could disagree, or where redaction adds the text.
    if "redacted" not in query.casefold():
        if not search.ignore_case:
            rows = rows.filter(content__contains=query)
        elif query.isascii():
            rows = rows.filter(content__icontains=query)
    found, truncated = search.first_matches(
        (((sid, pos, meta), content) for sid, pos, meta, content, _created in _redacted_rows(rows)),
        limits.LINE_MAX_BYTES,
    )
    matches = [
        HistoryMatch(
            source_id=sid, position=pos, window_id=_label(meta, "window_id", WINDOW_MAX_CHARS), match=match
        )
        for (sid, pos, meta), match in found
    ]
    return HistorySearch(matches=matches, truncated=truncated)


@dataclass(frozen=True)
class HistoryChunk:
    """One history item of a read with its redacted content; ``truncated`` when the read's
    byte budget cut the content short (the next read starts at this item)."""

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
    their redacted content within ``max_bytes`` UTF-8 bytes in total. The item that does not fit
    is cut at a character boundary and marked ``truncated``; reading stops there."""
    rows = _session_sources(scope_id, session_id, owner).filter(position__gte=from_position)
    if to_position is not None:
        rows = rows.filter(position__lte=to_position)
    rows = rows.order_by("position")[: limits.READ_MAX_ITEMS + 1]
    chunks: list[HistoryChunk] = []
    budget = max_bytes
    for sid, pos, meta, content, created in _redacted_rows(rows):
        if len(chunks) == limits.READ_MAX_ITEMS:
            return HistoryRange(items=chunks, truncated=True, next_position=pos)
        item = _item(sid, pos, meta, content, created)
        if item.size_bytes <= budget:
            chunks.append(HistoryChunk(item=item, content=content, truncated=False))
            budget -= item.size_bytes
            continue
        cut = clip_utf8(content, budget)
        if cut:
            chunks.append(HistoryChunk(item=item, content=cut, truncated=True))
            return HistoryRange(items=chunks, truncated=True, next_position=pos + 1)
        return HistoryRange(items=chunks, truncated=True, next_position=pos)
    return HistoryRange(items=chunks, truncated=False, next_position=None)


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
