"""The builder's trace: one decision per hit (admitted, duplicate or skipped and why, with its
sizes), made while building, so that explaining a prepare is formatting, never a replay.
Pure module: standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from powercontext.core.hits import ExperienceHit, MemoryHit
from powercontext.prepare.render import PreparedContext

ADMITTED = "admitted"
DUPLICATE = "duplicate"
SKIPPED = "skipped"
# Why a hit was not admitted. The last three are decided by selection, before the builder:
# ``window`` (beyond the candidate window) and ``below_relevance_floor`` (neither similar enough
# to the query nor covering enough of its words: ``powercontext.search.ranking.relevance``).
BELOW_RELEVANCE_FLOOR = "below_relevance_floor"
# Left out by selection because enough distinct reporters said it is wrong or outdated
# (``powercontext.feedback.prior``), until a person decides.
HELD_BY_REPORTS = "held_by_reports"
# A ``duplicate`` decided by selection: the same words in the same order as a hit it kept
# (case, punctuation, spacing and Unicode form aside), though a different citation.
NEAR_IDENTICAL = "near_identical"
# Left out by selection after the pack's cut (``powercontext.prepare.cut``): related to the
# prompt, but its estimated chance of being evidence is below the threshold.
BELOW_PACK_CUT = "below_pack_cut"
SKIP_REASONS = (
    "blank",
    "unencodable",
    "item_limit",
    "total_item_limit",
    "over_budget",
    "window",
    BELOW_RELEVANCE_FLOOR,
    HELD_BY_REPORTS,
    BELOW_PACK_CUT,
)
TRUNCATION_CAUSES = ("source_cap", "budget")


class Decision(NamedTuple):
    """What the builder (or selection, before it) did with one hit: the hit itself, never a copy.

    ``rank`` is the 1-based position in its source's search order; ``attempt`` the 1-based
    position in the interleaved order the builder tried (``None`` if never tried). Sizes are
    UTF-8 bytes of the rendered item (citation and framing included) and of its content.
    A named tuple: immutable and cheap to make, one per hit on every prepare.
    """

    source: str  # "memory" | "experience"
    rank: int
    hit: MemoryHit | ExperienceHit
    decision: str  # ADMITTED | DUPLICATE | SKIPPED
    reason: str | None = None  # SKIPPED; DUPLICATE only when selection decided it (NEAR_IDENTICAL)
    duplicate_of: int | None = None  # DUPLICATE only: rank of the first hit with the same citation
    # (NEAR_IDENTICAL: with the same wording)
    attempt: int | None = None
    item_bytes: int = 0
    content_bytes: int = 0
    truncated_by: str | None = None  # "source_cap" | "budget" (admitted and cut)

    @property
    def truncated(self) -> bool:
        return self.truncated_by is not None


@dataclass(frozen=True)
class Built:
    """The builder's result: the context and the trace of how it was made."""

    context: PreparedContext
    trace: tuple[Decision, ...]


def window(source: str, hits: Sequence[Any], limit: int) -> tuple[tuple[Any, ...], tuple[Decision, ...]]:
    """Split ``hits`` at the candidate window: the hits the builder may take, and the rest as
    ``window`` skips (ranked after the kept ones). Selection applies this before ``build``."""
    kept = tuple(hits[:limit])
    dropped = tuple(
        Decision(source, rank, hit, SKIPPED, reason="window")
        for rank, hit in enumerate(hits[limit:], start=limit + 1)
    )
    return kept, dropped
