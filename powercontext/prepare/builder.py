"""The pure prepared-context builder (RFC 0028 plus the approved-Experience amendment).

Pure module: standard library only. No Django, settings, clock, environment, logging or I/O; plain
frozen dataclasses in, a frozen dataclass out. The same input always gives the same output.

What ``PreparedContextBuilder.build`` guarantees:

- Selection. At most ``MEMORY_CANDIDATE_WINDOW`` Memory hits and ``EXPERIENCE_CANDIDATE_WINDOW``
  Experience hits are accepted. Search order is kept; nothing is reranked. Memory hits are
  deduplicated by ``(entry_id, entry_version_id)`` and Experience hits by ``artifact_ref``, the
  first occurrence winning; *then* bad hits are skipped (RFC 0028 steps 4 and 5, in that order).
  At most ``MEMORY_ITEM_LIMIT`` Memory and ``EXPERIENCE_ITEM_LIMIT`` Experience candidates remain;
  they are tried interleaved, Memory first (m1, e1, m2, e2, m3, m4, ...), and at most
  ``TOTAL_ITEM_LIMIT`` items are admitted.
- Bad hits are skipped, not errors: blank or whitespace-only text, blank ``entry_id`` or
  ``entry_version_id``; for Experience a blank ``artifact_id`` or any blank situation/action/
  outcome/lesson. A string holding a lone surrogate cannot be UTF-8 encoded; upstream validation
  rules that out, but should one arrive the hit is skipped as bad rather than crashing.
- Budget. ``content_bytes == len(content.encode("utf-8")) <= max_bytes``, counting the policy,
  markers, JSON framing and escaping, separators, citations and item content. An item's source is
  first capped at ``ITEM_SOURCE_CAP_BYTES``; an item that does not fit the remaining budget whole
  is cut to the longest code-point-safe prefix whose ``prefix + "…"`` still fits both the budget
  and ``ITEM_SOURCE_CAP_BYTES`` (every item content is at most that many bytes), provided that
  truncated content is at least ``MIN_TRUNCATED_BYTES`` UTF-8 bytes (measured on the content string
  itself, before JSON escaping). Otherwise the item is skipped and later items are still tried.
- Trust. Item text only ever appears inside a JSON string inside the fixed wrapper, so markers,
  newlines, NUL, terminal escapes or fences in a hit cannot cross the data boundary. The markers
  appear in the content once each: inside the envelope their text is written with one JSON
  escape (``render.MARKER_CORE``), which decodes to the exact original. Every
  rendered item carries its complete citation. ``truncated=false`` means the content equals the
  hit text (Memory) or the four rendered fields (Experience) exactly.
- Empty. When no item is admitted the result is ``status="empty"``, ``content=None``,
  ``content_bytes=0``; the caller cannot tell why.
- Trace. ``build`` returns ``Built``: the context and, computed as it goes (no second pass), one
  ``Decision`` per hit in search order (Memory, then Experience): ``admitted`` (with its attempt
  in the interleaved order, item and content sizes and what cut it), ``duplicate`` (of which
  rank) or ``skipped`` with a ``SKIP_REASONS`` reason. The trace holds the hits themselves and
  sizes, so explaining a prepare is formatting, never a replay.

Raises ``BuilderInvariantError`` -- with a generic message that never contains hit text, ids or
the query -- and renders nothing when the input breaks the Runtime's own contract: more hits than
the candidate windows, Memory hits without a selected head, a Memory hit whose ``memory_ref`` is
missing (``None``) or differs from the selected head, a head whose family is not ``"memory"``,
an Experience hit whose family is not ``"experience"``, malformed field types, or a
``max_bytes`` that is not an ``int`` in ``MIN_MAX_BYTES..MAX_MAX_BYTES`` (the HTTP layer validates
the request, so an out-of-range value reaching the builder is a Runtime bug, i.e. a 500, not a
422).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from powercontext.core.families import Family

# The builder's input types: the hit types search returns (one definition, re-exported here).
from powercontext.core.hits import ArtifactRef as ArtifactRef
from powercontext.core.hits import ExperienceContent as ExperienceContent
from powercontext.core.hits import ExperienceHit as ExperienceHit
from powercontext.core.hits import MemoryHit as MemoryHit

# The output and its rendering, and the trace's types (re-exported: callers import the builder).
from powercontext.prepare.render import BEGIN_MARKER as BEGIN_MARKER
from powercontext.prepare.render import CONTENT_PREFIX as CONTENT_PREFIX
from powercontext.prepare.render import CONTENT_SUFFIX as CONTENT_SUFFIX
from powercontext.prepare.render import ELLIPSIS as ELLIPSIS
from powercontext.prepare.render import ELLIPSIS_BYTES as ELLIPSIS_BYTES
from powercontext.prepare.render import END_MARKER as END_MARKER
from powercontext.prepare.render import ITEM_SOURCE_CAP_BYTES as ITEM_SOURCE_CAP_BYTES
from powercontext.prepare.render import MIN_TRUNCATED_BYTES as MIN_TRUNCATED_BYTES
from powercontext.prepare.render import POLICY as POLICY
from powercontext.prepare.render import SCHEMA as SCHEMA
from powercontext.prepare.render import STATUS_EMPTY as STATUS_EMPTY
from powercontext.prepare.render import STATUS_READY as STATUS_READY
from powercontext.prepare.render import TRUST as TRUST
from powercontext.prepare.render import Candidate, dumps, escaped_len, fit, utf8_len
from powercontext.prepare.render import PreparedContext as PreparedContext
from powercontext.prepare.render import render_content as render_content
from powercontext.prepare.render import render_experience_content as render_experience_content
from powercontext.prepare.trace import ADMITTED as ADMITTED
from powercontext.prepare.trace import DUPLICATE as DUPLICATE
from powercontext.prepare.trace import SKIP_REASONS as SKIP_REASONS
from powercontext.prepare.trace import SKIPPED as SKIPPED
from powercontext.prepare.trace import TRUNCATION_CAUSES as TRUNCATION_CAUSES
from powercontext.prepare.trace import Built as Built
from powercontext.prepare.trace import Decision as Decision
from powercontext.prepare.trace import window as window

MEMORY_CANDIDATE_WINDOW = 16
MEMORY_ITEM_LIMIT = 8
EXPERIENCE_CANDIDATE_WINDOW = 8
EXPERIENCE_ITEM_LIMIT = 2
TOTAL_ITEM_LIMIT = 8
MIN_MAX_BYTES = 512
MAX_MAX_BYTES = 32768
DEFAULT_MAX_BYTES = 8000
MEMORY_FAMILY = Family.MEMORY.value
EXPERIENCE_FAMILY = Family.EXPERIENCE.value


class BuilderInvariantError(Exception):
    """The builder's input broke a Runtime invariant; no content may be returned.

    Messages are generic on purpose: they never contain hit text, ids, scope or query.
    """


def _is_blank(text: str) -> bool:
    return not text.strip()


def _encodable(*texts: str) -> bool:
    try:
        for text in texts:
            if not text.isascii():  # ASCII always encodes; only then pay for a trial encode
                text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_revision(value: object) -> bool:
    return type(value) is int and value >= 1


def _check_ref_shape(ref: object, what: str) -> ArtifactRef:
    if not isinstance(ref, ArtifactRef):
        raise BuilderInvariantError(f"{what} is not an artifact reference")
    if not isinstance(ref.family, str) or not isinstance(ref.artifact_id, str):
        raise BuilderInvariantError(f"{what} has a malformed field")
    if not _is_revision(ref.revision):
        raise BuilderInvariantError(f"{what} has a revision that is not a positive integer")
    return ref


def _ref_dict(ref: ArtifactRef) -> dict[str, Any]:
    return {"family": ref.family, "artifact_id": ref.artifact_id, "revision": ref.revision}


def _memory_frame_base(head: ArtifactRef) -> int:
    """Size of a Memory item of ``head`` with empty ids and content; ids add their escaped size."""
    item = {
        "citation": {"memory_ref": _ref_dict(head), "entry_id": "", "entry_version_id": ""},
        "content": "",
        "truncated": False,
    }
    return utf8_len(dumps(item))


def _memory_candidate(head: ArtifactRef, hit: MemoryHit, frame_base: int) -> Candidate:
    citation = {
        "memory_ref": _ref_dict(head),
        "entry_id": hit.entry_id,
        "entry_version_id": hit.entry_version_id,
    }

    def make_item(content: str, truncated: bool) -> dict[str, Any]:
        return {"citation": citation, "content": content, "truncated": truncated}

    frame = frame_base + escaped_len(hit.entry_id) + escaped_len(hit.entry_version_id)
    return Candidate(source=hit.text, make_item=make_item, frame=frame)


def _experience_candidate(hit: ExperienceHit) -> Candidate:
    citation = {"artifact_ref": _ref_dict(hit.artifact_ref)}

    def make_item(content: str, truncated: bool) -> dict[str, Any]:
        return {"citation": citation, "content": content, "truncated": truncated, "kind": EXPERIENCE_FAMILY}

    return Candidate(
        source=render_experience_content(hit.content),
        make_item=make_item,
        frame=utf8_len(dumps(make_item("", False))),
    )


_EMPTY_ENVELOPE_BYTES = utf8_len(render_content(()))


# The hits of one source that were not admitted, by index: (decision, reason, duplicate_of, attempt).
_Dropped = dict[int, tuple[str, str | None, int | None, int | None]]
# The admitted hits of one source, by index: (attempt, item bytes, content bytes, truncated_by).
_Admitted = dict[int, tuple[int, int, int, str | None]]


def _problem(fields: tuple[str, ...]) -> str | None:
    """Why a hit is bad (``"blank"`` / ``"unencodable"``), or None."""
    if any(_is_blank(value) for value in fields):
        return "blank"
    if not _encodable(*fields):
        return "unencodable"
    return None


def _triage(
    hits: Sequence[Any],
    limit: int,
    key: Callable[[Any], object],
    fields: Callable[[Any], tuple[str, ...]],
    make: Callable[[Any], Candidate],
) -> tuple[list[tuple[int, Candidate]], _Dropped]:
    """RFC 0028 steps 4 and 5 for one source: deduplicate (the first occurrence wins), then skip
    bad hits, until ``limit`` candidates are selected; every later hit is an ``item_limit`` skip.
    Returns the selected (hit index, candidate) pairs and what happened to the others."""
    first: dict[object, int] = {}
    selected: list[tuple[int, Candidate]] = []
    dropped: _Dropped = {}
    for index, hit in enumerate(hits):
        if len(selected) == limit:
            dropped[index] = (SKIPPED, "item_limit", None, None)
            continue
        citation = key(hit)
        if citation in first:
            dropped[index] = (DUPLICATE, None, first[citation] + 1, None)
            continue
        first[citation] = index
        problem = _problem(fields(hit))
        if problem is not None:
            dropped[index] = (SKIPPED, problem, None, None)
            continue
        selected.append((index, make(hit)))
    return selected, dropped


def _decisions(
    source: str,
    hits: Sequence[MemoryHit | ExperienceHit],
    dropped: _Dropped,
    admitted: _Admitted,
) -> list[Decision]:
    """One source's trace, in search order (every hit is either admitted or dropped)."""
    result = []
    for index, hit in enumerate(hits):
        done = admitted.get(index)
        if done is None:
            decision, reason, duplicate_of, attempt = dropped[index]
            result.append(Decision(source, index + 1, hit, decision, reason, duplicate_of, attempt))
        else:
            attempt, item_bytes, content_bytes, cut = done
            result.append(
                Decision(
                    source, index + 1, hit, ADMITTED, None, None, attempt, item_bytes, content_bytes, cut
                )
            )
    return result


class PreparedContextBuilder:
    """Selects, truncates and renders cited items into one budgeted PreparedContext.

    See the module docstring for the selection rules, the guarantees and the invariant failures.
    """

    def build(
        self,
        *,
        memory_ref: ArtifactRef | None,
        memory_hits: Sequence[MemoryHit],
        experience_hits: Sequence[ExperienceHit],
        max_bytes: int,
    ) -> Built:
        """Build the prepared context for one request against one selected Memory head.

        ``memory_ref`` is the head selected for this request (``None`` when the scope has no
        Memory); ``memory_hits`` and ``experience_hits`` are in search order. Returns the
        context with its trace (one ``Decision`` per hit, Memory first, each in search order).

        Raises BuilderInvariantError (see the module docstring); never returns partial content.
        """
        if type(max_bytes) is not int or not MIN_MAX_BYTES <= max_bytes <= MAX_MAX_BYTES:
            raise BuilderInvariantError("max_bytes is not an integer within the supported range")
        memory_hits = tuple(memory_hits)
        experience_hits = tuple(experience_hits)
        memories, memory_dropped = self._select_memories(memory_ref, memory_hits)
        experiences, experience_dropped = self._select_experiences(experience_hits)

        # Interleaved, Memory first: (the source's dropped and admitted maps, hit index, candidate).
        memory_admitted: _Admitted = {}
        experience_admitted: _Admitted = {}
        ordered: list[tuple[_Dropped, _Admitted, int, Candidate]] = []
        for index in range(max(len(memories), len(experiences))):
            if index < len(memories):
                ordered.append((memory_dropped, memory_admitted, *memories[index]))
            if index < len(experiences):
                ordered.append((experience_dropped, experience_admitted, *experiences[index]))

        total = _EMPTY_ENVELOPE_BYTES
        items: list[dict[str, Any]] = []
        for attempt, (dropped, admitted, position, candidate) in enumerate(ordered, start=1):
            if len(items) >= TOTAL_ITEM_LIMIT:
                dropped[position] = (SKIPPED, "total_item_limit", None, None)
                continue
            separator = 1 if items else 0  # the "," between array elements
            fitted = fit(candidate, max_bytes - total - separator)
            if fitted is None:
                dropped[position] = (SKIPPED, "over_budget", None, attempt)
                continue
            item, size, cut = fitted
            items.append(item)
            total += separator + size
            admitted[position] = (attempt, size, utf8_len(item["content"]), cut)

        trace = (
            *_decisions(MEMORY_FAMILY, memory_hits, memory_dropped, memory_admitted),
            *_decisions(EXPERIENCE_FAMILY, experience_hits, experience_dropped, experience_admitted),
        )
        if not items:
            return Built(PreparedContext.empty(), trace)
        content = render_content(items)
        content_bytes = utf8_len(content)
        # The incremental accounting must agree with the real rendering; if it ever does not,
        # refuse rather than return content that may break the caller's budget.
        if content_bytes != total or content_bytes > max_bytes:
            raise BuilderInvariantError("rendered content disagrees with the byte budget accounting")
        context = PreparedContext(
            schema=SCHEMA, status=STATUS_READY, content=content, content_bytes=content_bytes
        )
        return Built(context, trace)

    @staticmethod
    def _select_memories(
        memory_ref: ArtifactRef | None, hits: tuple[MemoryHit, ...]
    ) -> tuple[list[tuple[int, Candidate]], _Dropped]:
        if len(hits) > MEMORY_CANDIDATE_WINDOW:
            raise BuilderInvariantError("more memory hits than the candidate window")
        if memory_ref is not None:
            _check_ref_shape(memory_ref, "selected memory head")
            if memory_ref.family != MEMORY_FAMILY:
                raise BuilderInvariantError("selected memory head is not a memory artifact")
            if _is_blank(memory_ref.artifact_id) or not _encodable(memory_ref.artifact_id):
                raise BuilderInvariantError("selected memory head has a malformed artifact id")
        if not hits:
            return [], {}
        if memory_ref is None:
            raise BuilderInvariantError("memory hits without a selected memory head")

        for hit in hits:
            if not isinstance(hit, MemoryHit):
                raise BuilderInvariantError("memory hit is not a MemoryHit")
            # A hit without a memory_ref cannot prove it came from the selected head.
            if hit.memory_ref is None:
                raise BuilderInvariantError("memory hit cites no memory revision")
            _check_ref_shape(hit.memory_ref, "memory hit reference")
            if hit.memory_ref != memory_ref:
                raise BuilderInvariantError("memory hit cites a revision other than the selected head")
            if not all(isinstance(value, str) for value in (hit.entry_id, hit.entry_version_id, hit.text)):
                raise BuilderInvariantError("memory hit has a malformed field")

        frame_base = _memory_frame_base(memory_ref)
        return _triage(
            hits,
            MEMORY_ITEM_LIMIT,
            lambda hit: (hit.entry_id, hit.entry_version_id),
            lambda hit: (hit.entry_id, hit.entry_version_id, hit.text),
            lambda hit: _memory_candidate(memory_ref, hit, frame_base),
        )

    @staticmethod
    def _select_experiences(
        hits: tuple[ExperienceHit, ...],
    ) -> tuple[list[tuple[int, Candidate]], _Dropped]:
        if len(hits) > EXPERIENCE_CANDIDATE_WINDOW:
            raise BuilderInvariantError("more experience hits than the candidate window")
        for hit in hits:
            if not isinstance(hit, ExperienceHit) or not isinstance(hit.content, ExperienceContent):
                raise BuilderInvariantError("experience hit is not an ExperienceHit")
            ref = _check_ref_shape(hit.artifact_ref, "experience hit reference")
            if ref.family != EXPERIENCE_FAMILY:
                raise BuilderInvariantError("experience hit is not an experience artifact")
            content = hit.content
            if not all(isinstance(value, str) for value in content.values()):
                raise BuilderInvariantError("experience hit has a malformed field")

        return _triage(
            hits,
            EXPERIENCE_ITEM_LIMIT,
            lambda hit: hit.artifact_ref,
            lambda hit: (hit.artifact_ref.artifact_id, *hit.content.values()),
            _experience_candidate,
        )
