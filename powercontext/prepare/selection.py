"""The prepare path's one read: Memory and approved-Experience candidates in one statement.

Search returns the builder's own hit types (``powercontext.core.hits``), so selection passes them
on as they are: no copy into another shape. Each hit carries its relevance figures (raw
similarity, lexical share; ``powercontext.search.ranking.relevance``), and only hits at or above
the relevance floor reach the builder: an unrelated prompt gets no candidate and so the empty
result.
Near-identical hits (the same words in the same order as a better-ranked one, under another
citation) are collapsed here too, so that the window's slots carry different facts.

Feedback (``powercontext.feedback``) is read here too: the hits' counters, which the process
keeps while the scope's counter generation (one indexed row, read every time) stays the same,
else one indexed read. A Memory entry version that enough distinct reporters called wrong or
outdated is held out (``held_by_reports``) until a person decides, and the bounded use prior
(``feedback.prior``) reorders the hits the floor admits. Then the pack's cut (``prepare.cut``)
stops admitting Memory hits where the evidence runs out (``below_pack_cut``). Selection never
writes.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from django.conf import settings
from django.utils import timezone

from powercontext import search
from powercontext.core.families import MEMORY_ARTIFACT_ID, Family
from powercontext.feedback import prior as feedback_prior
from powercontext.feedback import selectors as feedback_selectors
from powercontext.feedback.prior import PriorPolicy, Usage
from powercontext.prepare import cut as pack_cut
from powercontext.prepare.builder import (
    EXPERIENCE_FAMILY,
    MEMORY_FAMILY,
    SKIPPED,
    ArtifactRef,
    Decision,
    ExperienceHit,
    MemoryHit,
)
from powercontext.prepare.cut import CutFigures
from powercontext.prepare.trace import (
    BELOW_PACK_CUT,
    BELOW_RELEVANCE_FLOOR,
    DUPLICATE,
    HELD_BY_REPORTS,
    NEAR_IDENTICAL,
)
from powercontext.search.fulltext import analyzer, languages
from powercontext.search.ranking import relevance, rerank

# Ranked deeper than the windows, so that candidates below the relevance floor make room.
RELEVANCE_DEPTH_FACTOR = 2

Hit = TypeVar("Hit", MemoryHit, ExperienceHit)


@dataclass(frozen=True)
class ContextCandidates:
    """What the builder needs: the head the Memory hits cite (None: no Memory hit) and the
    ranked hits of both sources; ``dropped``: hits selection read and did not pass on (skip
    decisions with selection's reason: below the relevance floor, or beyond the window), so
    that an explanation still shows them."""

    memory_ref: ArtifactRef | None
    memory_hits: list[MemoryHit]
    experience_hits: list[ExperienceHit]
    dropped: tuple[Decision, ...] = field(default_factory=tuple)
    # Feedback of the hits read (``feedback_target`` keys): counters and the prior each got.
    usage: dict[str, Usage] = field(default_factory=dict)
    priors: dict[str, float] = field(default_factory=dict)
    # The pack's cut (``prepare.cut``): each Memory hit's evidence estimate, by
    # ``feedback_target`` key, for the hits it judged (none when it did not apply), and the
    # threshold it used (0: off or not applied).
    estimates: dict[str, float] = field(default_factory=dict)
    cut_threshold: float = 0.0
    # The figures each estimate was computed from (a ``cut.figures`` row, in ``cut.FIGURES``
    # order), same keys; only explain names them.
    evidence_figures: dict[str, tuple[float, ...]] = field(default_factory=dict)


def memory_ref(revision: int) -> ArtifactRef:
    return ArtifactRef(family=Family.MEMORY, artifact_id=MEMORY_ARTIFACT_ID, revision=revision)


_WORD = re.compile(r"\w+")


def _texts(hit: MemoryHit | ExperienceHit) -> tuple[str, ...]:
    """A hit's text fields: a Memory entry's text, an Experience's four fields."""
    return (hit.text,) if isinstance(hit, MemoryHit) else tuple(hit.content.values())


def wording(hit: MemoryHit | ExperienceHit) -> tuple[str, ...] | None:
    """What two near-identical hits share: their words in order, per text field, ignoring case
    (Unicode case folding), punctuation, spacing and Unicode form (NFKC). None for a hit without
    a word (emoji or punctuation only), which is never taken for another. "Port 6543." and
    "port 6543" are near-identical; "port 6543" and "port 5432", or a sentence with "not" and
    one without, are not."""
    texts = _texts(hit)
    words = tuple(" ".join(_WORD.findall(unicodedata.normalize("NFKC", text).casefold())) for text in texts)
    return words if any(words) else None


def feedback_target(hit: MemoryHit | ExperienceHit) -> str:
    """The hit's key among its scope's feedback items."""
    if isinstance(hit, MemoryHit):
        return feedback_prior.memory_target(hit.entry_version_id)
    return feedback_prior.experience_target(hit.artifact_ref.artifact_id, hit.artifact_ref.revision)


def select(
    source: str,
    hits: Sequence[Hit],
    admitted: Sequence[bool],
    limit: int,
    held: frozenset[int] = frozenset(),
    keep: Callable[[list[Hit]], list[bool]] | None = None,
) -> tuple[list[Hit], list[Decision]]:
    """The first ``limit`` hits the relevance floor admitted (``admitted``, one flag per hit),
    not held (``held``: indexes into ``hits``) and not near-identical to an earlier kept one, in the
    order given, and the others as decisions ranked after the kept ones in that order: skips
    (``below_relevance_floor``, ``held_by_reports``, ``window``) and ``near_identical``
    duplicates (``duplicate_of``: the rank of the kept hit with the same wording). ``keep``, when
    given, is the pack's cut: one flag per kept hit; those it refuses become ``below_pack_cut``
    skips, ranked right after the hits that stay."""
    kept: list[Hit] = []
    seen: dict[tuple[str, ...], int] = {}  # wording -> rank of the kept hit
    dropped: list[tuple[Hit, str, int | None]] = []
    for index, (hit, relevant) in enumerate(zip(hits, admitted, strict=True)):
        if not relevant:
            dropped.append((hit, BELOW_RELEVANCE_FLOOR, None))
        elif index in held:
            dropped.append((hit, HELD_BY_REPORTS, None))
        elif len(kept) >= limit:
            dropped.append((hit, "window", None))
        else:
            words = wording(hit)
            if words is not None and words in seen:
                dropped.append((hit, NEAR_IDENTICAL, seen[words]))
                continue
            kept.append(hit)
            if words is not None:
                seen[words] = len(kept)
    if keep is not None and kept:
        kept, dropped = _cut(kept, keep(kept), dropped)
    decisions = [
        Decision(source, rank, hit, SKIPPED, reason=reason)
        if duplicate_of is None
        else Decision(source, rank, hit, DUPLICATE, reason=reason, duplicate_of=duplicate_of)
        for rank, (hit, reason, duplicate_of) in enumerate(dropped, start=len(kept) + 1)
    ]
    return kept, decisions


def _cut(
    kept: list[Hit], flags: Sequence[bool], dropped: list[tuple[Hit, str, int | None]]
) -> tuple[list[Hit], list[tuple[Hit, str, int | None]]]:
    """``kept`` split by the cut's ``flags``: the hits that stay, and ``dropped`` with the cut
    hits first; a near-identical duplicate's ``duplicate_of`` follows its hit to its new rank."""
    if all(flags):
        return kept, dropped
    # old rank (1-based among ``kept``) -> new rank: the hits that stay first, then the cut ones
    moved = [old for old, flag in enumerate(flags, start=1) if flag]
    moved += [old for old, flag in enumerate(flags, start=1) if not flag]
    rank_of: dict[int, int] = {old: new for new, old in enumerate(moved, start=1)}
    stay: list[Hit] = [hit for hit, flag in zip(kept, flags, strict=True) if flag]
    out: list[tuple[Hit, str, int | None]] = [
        (hit, BELOW_PACK_CUT, None) for hit, flag in zip(kept, flags, strict=True) if not flag
    ]
    out += [(hit, reason, rank_of[of] if of is not None else None) for hit, reason, of in dropped]
    return stay, out


def cut_figures(hit: MemoryHit, query_words: set[str]) -> CutFigures:
    """What the pack's cut reads of ``hit`` (``query_words``: the prompt's ``analyzer.analyze``
    words, for the speaker label)."""
    return CutFigures(
        hit.score,
        hit.similarity,
        hit.lexical_share,
        len(hit.text),
        both_channels="fts" in hit.matched_by and "vector" in hit.matched_by,
        asks=pack_cut.asks(hit.text),
        speaker=rerank.speaker_named(hit.text, query_words),
        position=hit.position,
    )


def admits(hits: Sequence[Hit], floors: relevance.QueryFloor) -> list[bool]:
    """Whether the relevance floor for this query (``floors.admits``) admits each hit."""
    return [floors.admits(_texts(hit), hit.similarity, hit.lexical_share) for hit in hits]


def context_candidates(
    *, scope_id: str, query: str, memory_limit: int, experience_limit: int, now: datetime | None = None
) -> ContextCandidates:
    """Ranked Memory hits of the scope's current head (all citing one head revision) and ranked
    approved, current Experience heads, each at or above the relevance floor.

    With the embedding model (``search.best_mode(query) == "hybrid"``: a model that reads the
    query's script, ``embedding.reads``) Memory is ranked by
    ``rerank.ranked_context`` (deep full-text and vector pools, neighbour smoothing, a speaker
    prior) and Experience by fusion; without it, by full text alone (both windows read by one
    statement). Every candidate then gets its raw similarity and lexical share and the floor
    for this query decides (``relevance.query_floor``: stricter on similarity when the
    candidate is in another language than English and the query not surely English); the
    builder sees the same dataclasses either way. Only the admitted hits' feedback counters are
    read: they alone can be held or weighed (``now``: the prior's clock, default the current
    time; the replay evaluation passes simulated days). Last, on hybrid rankings of English
    prompts, the pack's cut (``prepare.cut``, ``POWERCONTEXT_PACK_CUT``) leaves out the Memory
    hits after the first whose evidence estimate is below the threshold: a related prompt gets
    as many items as its evidence needs.
    """
    hybrid = search.best_mode(query) == "hybrid"
    limits = {
        "memory_limit": memory_limit * RELEVANCE_DEPTH_FACTOR,
        "experience_limit": experience_limit * RELEVANCE_DEPTH_FACTOR,
    }
    counted: dict[str, int] | None = None  # full text only: the statement's document frequencies
    if hybrid:
        memory_found, experience_found = rerank.ranked_context(scope_id, query, **limits)
    else:
        memory_found, experience_found, counted = search.search_context_counted(scope_id, query, **limits)
    memory_found = relevance.annotate_memory(scope_id, query, memory_found, counted)
    experience_found = relevance.annotate_experience(scope_id, query, experience_found)
    floors = relevance.query_floor(query)
    memory_admitted = admits(memory_found, floors)
    experience_admitted = admits(experience_found, floors)
    memory_keys = [
        feedback_target(hit) if ok else "" for hit, ok in zip(memory_found, memory_admitted, strict=True)
    ]
    experience_keys = [
        feedback_target(hit) if ok else ""
        for hit, ok in zip(experience_found, experience_admitted, strict=True)
    ]
    usage = feedback_selectors.usage_for(scope_id, [key for key in (*memory_keys, *experience_keys) if key])
    priors: dict[str, float] = {}
    held: frozenset[int] = frozenset()
    if usage:
        policy = feedback_selectors.policy()
        clock = (now or timezone.now()).timestamp()
        memory_found, memory_admitted, held = weigh(
            MEMORY_FAMILY, memory_found, memory_admitted, memory_keys, usage, policy, clock, priors
        )
        experience_found, experience_admitted, _ = weigh(
            EXPERIENCE_FAMILY,
            experience_found,
            experience_admitted,
            experience_keys,
            usage,
            policy,
            clock,
            priors,
        )
    # Calibrated on hybrid rankings of English prompts: elsewhere the floor stays the only stop.
    english = floors.language == languages.ENGLISH
    threshold = float(settings.POWERCONTEXT_PACK_CUT) if hybrid and english else 0.0
    estimates: dict[str, float] = {}
    evidence_figures: dict[str, tuple[float, ...]] = {}

    def keep(kept: list[MemoryHit]) -> list[bool]:
        words = set(analyzer.analyze(query))
        rows = pack_cut.figures([cut_figures(hit, words) for hit in kept])
        values = pack_cut.estimates_of(rows)
        for hit, row, value in zip(kept, rows, values, strict=True):
            target = feedback_target(hit)
            estimates[target] = value
            evidence_figures[target] = row
        return pack_cut.keeps(values, threshold)

    memory_hits, memory_dropped = select(
        MEMORY_FAMILY, memory_found, memory_admitted, memory_limit, held, keep if threshold > 0 else None
    )
    experience_hits, experience_dropped = select(
        EXPERIENCE_FAMILY, experience_found, experience_admitted, experience_limit
    )
    return ContextCandidates(
        memory_ref=memory_hits[0].memory_ref if memory_hits else None,
        memory_hits=memory_hits,
        experience_hits=experience_hits,
        dropped=(*memory_dropped, *experience_dropped),
        usage=usage,
        priors=priors,
        estimates=estimates,
        cut_threshold=threshold,
        evidence_figures=evidence_figures,
    )


def weigh(
    family: str,
    hits: Sequence[Hit],
    admitted: Sequence[bool],
    keys: Sequence[str],
    usage: dict[str, Usage],
    policy: PriorPolicy,
    now: float,
    priors: dict[str, float],
) -> tuple[list[Hit], list[bool], frozenset[int]]:
    """``hits`` (and their floor flags) reordered by the use prior (``feedback.prior.order``),
    and the indexes (into the reordered hits) of those held out by reports; ``keys`` are the
    hits' feedback targets ("" for a hit the floor rejected). Each weighed hit's prior is added to
    ``priors``. Order changes only where a prior is not 0."""
    by_index: dict[int, float] = {}
    held: list[int] = []
    for index, key in enumerate(keys):
        counters = usage.get(key)  # a rejected hit's key is "", never a counter's
        if counters is None:
            continue
        if policy.held(counters, family):
            held.append(index)
        value = policy.prior(counters, family, now)
        priors[key] = value
        if value:
            by_index[index] = value
    ordered = feedback_prior.order([hit.score for hit in hits], by_index) if by_index else None
    if ordered is None or ordered == list(range(len(hits))):  # nothing moved
        return list(hits), list(admitted), frozenset(held)
    position = {old: new for new, old in enumerate(ordered)}
    return (
        [hits[i] for i in ordered],
        [admitted[i] for i in ordered],
        frozenset(position[i] for i in held),
    )
