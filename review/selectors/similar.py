"""Near-duplicate Experiences: the approved heads and pending candidates of a scope that say the
same thing as a proposal.

One rule for the whole product: approved Experiences are found through the product's own ranked
search (``search.search_experience``, the index prepare recalls from), pending ones by scanning
the scope's newest pending candidates (they have no index rows); both are then scored by the
Jaccard similarity of their analyzer terms over the family's searchable fields (for pending
candidates from the bottom-k sketch stored with each version: exact up to ``SKETCH`` distinct
terms, an estimate beyond). The pipeline's
Phase 2 skips a proposal with any match at ``NEAR_DUPLICATE`` or above; the Inbox's candidate
page lists the best matches with a one-click "Reject as duplicate of ...".
"""

from __future__ import annotations

import hashlib
import heapq
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from django.db.models.functions import Length

from powercontext import search
from powercontext.core import families
from powercontext.core.recall import recallable_experience_heads
from powercontext.search import analyzer
from review.models import Candidate

NEAR_DUPLICATE = 0.8  # Jaccard similarity of analyzer terms at or above which two Experiences are one
PENDING_SCAN = 500  # newest pending candidates of the scope compared (one query)
APPROVED_SEARCH = 8  # ranked approved heads compared
APPROVED_SCAN = 500  # newest approved heads of a queue page's scopes compared by the row flag
APPROVED_BYTES = 1_000_000  # ... and at most this much of their searchable text read per page
SKETCH = 256  # bottom-k hashes kept per term set: exact Jaccard up to this many distinct terms
SHOWN = 5  # matches the candidate page lists
SHOWN_FLOOR = 0.2  # below this similarity a match is not worth a reviewer's look


@dataclass(frozen=True)
class Similar:
    """One Experience similar to the proposal: an approved head (``artifact_id``/``revision``) or
    a pending candidate (``candidate_pk``). For an approved head, ``candidate_pk`` is the
    candidate whose approval wrote that revision, when it is known (its Inbox page)."""

    status: str  # "approved" or "pending"
    similarity: float
    title: str
    artifact_id: str | None = None
    revision: int | None = None
    candidate_pk: int | None = None
    candidate_id: str | None = None
    artifact_pk: int | None = None

    @property
    def percent(self) -> int:
        return int(self.similarity * 100)

    @property
    def near_duplicate(self) -> bool:
        return self.similarity >= NEAR_DUPLICATE

    @property
    def label(self) -> str:
        if self.status == "approved":
            return f"approved Experience {self.artifact_id} (revision {self.revision})"
        return f"pending candidate #{self.candidate_pk} ({self.candidate_id})"

    @property
    def reject_reason(self) -> str:
        """The reason "Reject as duplicate of ..." records: names the other one exactly."""
        return f"Duplicate of {self.label}."


def terms(proposal: Any) -> set[str]:
    """Analyzer terms of an Experience proposal's searchable fields (empty if it has none)."""
    try:
        values = families.EXPERIENCE.searchable_values(proposal)
    except (KeyError, TypeError):
        return set()
    return set(analyzer.searchable_text(values).split())


def _term_hash(term: str) -> int:
    # Stable across processes (the sketch is stored), 56 bits: a JSON and database integer.
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=7).digest(), "big")


def sketch(found: Iterable[str]) -> list[int]:
    """The ``SKETCH`` smallest hashes of a term set, ascending (a bottom-k MinHash sketch)."""
    return heapq.nsmallest(SKETCH, {_term_hash(term) for term in found})


def sketch_similarity(a: Sequence[int], a_count: int, b: Sequence[int], b_count: int) -> float:
    """Jaccard similarity of two term sets from their sketches (ascending): exact when both hold
    at most ``SKETCH`` distinct terms (the sketch is then the whole set), else estimated over the
    hashes below the smaller of the two sketches' largest (at least ``SKETCH`` of the union's
    smallest hashes; the standard error is about 2.5 points at 0.8)."""
    if not a or not b:
        return 0.0
    return _similarity(frozenset(a), a[-1], a_count, frozenset(b), b[-1], b_count)


def _similarity(
    mine: frozenset[int], my_top: int, my_count: int, theirs: frozenset[int], their_top: int, their_count: int
) -> float:
    both = mine & theirs
    if my_count <= SKETCH and their_count <= SKETCH:
        return len(both) / (len(mine) + len(theirs) - len(both))
    limit = min(my_top, their_top)
    shared = sum(1 for value in both if value <= limit)
    seen = sum(1 for value in mine if value <= limit) + sum(1 for value in theirs if value <= limit) - shared
    return shared / seen


def forget_digests() -> None:
    """Nothing to forget any more: pending versions are compared by the sketches stored with
    them, not by a per-process cache of analyzed proposals. Kept for the callers that empty it
    before measuring (tests, ``bench_review_queue``)."""


def similarity(a: set[str] | frozenset[str], b: set[str] | frozenset[str]) -> float:
    """Jaccard similarity of two term sets (0 when either is empty)."""
    return len(a & b) / len(a | b) if a and b else 0.0


def _title(proposal: Any) -> str:
    text = proposal.get(families.EXPERIENCE.title_field, "") if isinstance(proposal, dict) else ""
    line = next((part.strip() for part in str(text).splitlines() if part.strip()), "")
    return line if len(line) <= 160 else line[:159].rstrip() + "…"


def similar_experiences(
    *,
    scope_id: str,
    proposal: Mapping[str, Any],
    exclude_candidate: int | None = None,
    exclude_artifacts: Iterable[str] = (),
) -> list[Similar]:
    """Every compared Experience with its similarity to ``proposal``, most similar first (ties:
    approved first, then oldest). Two queries: the ranked search and the pending scan, which
    reads each pending version's stored term sketch, never its proposal; pending matches carry
    no title (``candidate_similar`` reads the titles of those it shows)."""
    mine = terms(proposal)
    if not mine:
        return []
    skip = set(exclude_artifacts)
    query = " ".join(families.EXPERIENCE.searchable_values(proposal))
    found: list[Similar] = []
    for hit in search.search_experience(scope_id, query, APPROVED_SEARCH):
        if hit.artifact_ref.artifact_id in skip:
            continue
        content = hit.content.as_mapping()
        found.append(
            Similar(
                status="approved",
                similarity=similarity(mine, terms(content)),
                title=_title(content),
                artifact_id=hit.artifact_ref.artifact_id,
                revision=hit.artifact_ref.revision,
                artifact_pk=hit.key,
            )
        )
    pending = Candidate.objects.filter(
        scope_id=scope_id, family=Candidate.Family.EXPERIENCE, status=Candidate.Status.PENDING
    )
    if exclude_candidate is not None:
        pending = pending.exclude(pk=exclude_candidate)
    # Pending ones by their stored term sketches (never their proposals: bounded work whatever
    # the queue holds); titles are read for the ones a page shows (``candidate_similar``).
    rows = list(
        pending.filter(latest__terms_sketch__isnull=False)
        .order_by("-pk")
        .values_list("pk", "candidate_id", "latest__terms_sketch", "latest__terms_count")[:PENDING_SCAN]
    )
    my_sketch, my_count = sketch(mine), len(mine)
    for pk, candidate_id, hashes, count in rows:
        found.append(
            Similar(
                status="pending",
                similarity=sketch_similarity(my_sketch, my_count, hashes or [], count or 0),
                title="",
                candidate_pk=pk,
                candidate_id=candidate_id,
            )
        )
    found.sort(key=lambda s: (-s.similarity, s.status != "approved", s.candidate_pk or 0))
    return found


def is_near_duplicate(scope_id: str, proposal: Mapping[str, Any]) -> bool:
    """Whether an approved or pending Experience of the scope says the same thing as
    ``proposal`` (similarity at or above ``NEAR_DUPLICATE``)."""
    return any(s.near_duplicate for s in similar_experiences(scope_id=scope_id, proposal=proposal))


def candidate_similar(candidate: Candidate, *, limit: int = SHOWN) -> list[Similar]:
    """The Experiences most similar to a pending Experience candidate's current version (at most
    ``limit``, at least ``SHOWN_FLOOR`` similar), excluding itself and its own target; approved
    ones carry the candidate whose approval wrote them. At most four queries and bounded work,
    whatever the size of the scope (the pending scan reads stored sketches); nothing for a Skill
    or a decided candidate."""
    latest = candidate.latest
    if (
        candidate.family != Candidate.Family.EXPERIENCE
        or candidate.status != Candidate.Status.PENDING
        or latest is None
        or not isinstance(latest.proposal, dict)
    ):
        return []
    target = latest.target.get("artifact_id") if isinstance(latest.target, dict) else None
    found = similar_experiences(
        scope_id=candidate.scope_id,
        proposal=latest.proposal,
        exclude_candidate=candidate.pk,
        exclude_artifacts=[target] if target else [],
    )
    shown = [s for s in found if s.similarity >= SHOWN_FLOOR][:limit]
    pending_pks = [s.candidate_pk for s in shown if s.status == "pending" and s.candidate_pk is not None]
    if pending_pks:
        titles = {
            pk: _title(proposal)
            for pk, proposal in Candidate.objects.filter(pk__in=pending_pks).values_list(
                "pk", "latest__proposal"
            )
        }
        shown = [
            replace(s, title=titles.get(s.candidate_pk or 0, "")) if s.status == "pending" else s
            for s in shown
        ]
    heads = [s.artifact_pk for s in shown if s.artifact_pk is not None]
    if not heads:
        return shown
    approvers: dict[tuple[int | None, int | None], int] = {
        (head, revision): pk
        for head, revision, pk in Candidate.objects.filter(
            result_head_id__in=heads, status=Candidate.Status.APPROVED
        ).values_list("result_head_id", "result_revision", "pk")
    }
    return [
        replace(s, candidate_pk=approvers.get((s.artifact_pk, s.revision))) if s.status == "approved" else s
        for s in shown
    ]


def near_duplicate_flags(candidates: Sequence[Candidate]) -> dict[int, bool]:
    """The queue's row flag: for each pending Experience candidate of one page (``latest``
    selected), whether a pending candidate or an approved Experience of its scope is a near-
    duplicate of it (its own target excluded).

    The same rule as ``similar_experiences`` with the search replaced by a bounded scan, so the
    page does bounded work whatever the queue holds (issue 20, N2): a fixed number of queries,
    the term sketches written with each version (``CandidateVersion.terms_sketch``: at most
    ``SKETCH`` integers each, never the proposals) of the newest ``PENDING_SCAN`` pending
    Experiences, and the searchable text of at most ``APPROVED_SCAN`` approved heads and
    ``APPROVED_BYTES`` characters. A match outside those windows goes unflagged (the candidate
    page searches the whole scope)."""
    page = [
        c
        for c in candidates
        if c.family == Candidate.Family.EXPERIENCE and c.status == Candidate.Status.PENDING and c.latest_id
    ]
    if not page:
        return {}
    scopes = sorted({c.scope_id for c in page})
    others: defaultdict[str, list[tuple[int | str, frozenset[int], int, int]]] = defaultdict(list)
    pending = (
        Candidate.objects.filter(
            scope_id__in=scopes,
            family=Candidate.Family.EXPERIENCE,
            status=Candidate.Status.PENDING,
            latest__terms_sketch__isnull=False,
        )
        .order_by("-pk")
        .values_list("pk", "scope_id", "latest__terms_sketch", "latest__terms_count")[:PENDING_SCAN]
    )
    for pk, scope_id, hashes, count in pending:
        if hashes:
            others[scope_id].append((pk, frozenset(hashes), max(hashes), count or 0))
    heads = recallable_experience_heads().filter(scope_id__in=scopes)
    sizes = heads.annotate(size=Length("searchable_text")).order_by("-pk").values_list("pk", "size")
    chosen: list[int] = []
    spent = 0
    for head_pk, size in sizes[:APPROVED_SCAN]:
        spent += size or 0
        if spent > APPROVED_BYTES:
            break
        chosen.append(head_pk)
    for scope_id, artifact_id, text in heads.filter(pk__in=chosen).values_list(
        "scope_id", "artifact_id", "searchable_text"
    ):
        found = set(text.split())
        if found:
            hashes = sketch(found)
            others[scope_id].append((artifact_id, frozenset(hashes), hashes[-1], len(found)))
    flags: dict[int, bool] = {}
    for candidate in page:
        latest = candidate.latest
        hashes = (latest.terms_sketch if latest is not None else None) or []
        count = (latest.terms_count if latest is not None else None) or 0
        target = latest.target.get("artifact_id") if latest and isinstance(latest.target, dict) else None
        # Jaccard >= t needs the smaller set to hold at least t of the larger: sizes first.
        low, high = count * NEAR_DUPLICATE, count / NEAR_DUPLICATE
        mine, top = frozenset(hashes), max(hashes, default=0)
        flags[candidate.pk] = bool(hashes) and any(
            low <= their_count <= high
            and key not in (candidate.pk, target)
            and _similarity(mine, top, count, theirs, their_top, their_count) >= NEAR_DUPLICATE
            for key, theirs, their_top, their_count in others[candidate.scope_id]
        )
    return flags
