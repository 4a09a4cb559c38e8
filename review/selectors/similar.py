"""Near-duplicate Experiences and Skills: the approved heads and pending candidates of a scope
that say the same thing as a proposal, and which of two copies came later.

One rule for the whole product (``near_window`` loads what is compared, ``nearness`` scores it):
a pending candidate is compared with the scope's window (the newest pending candidates' stored
term sketches and the newest approved heads; for Experiences also the product's ranked search,
which finds an approved match beyond the window) by a weighted Jaccard similarity in which
words common across the scope count for less. At or above ``near_window.threshold()`` the two
are near-duplicates; of such a pair only the *later* one (approved heads come first, then by
proposal time, then by id) is flagged, linked to the earlier. The pipeline's Phase 2 skips a
proposal with any near-duplicate; the queue flags the later copies (and filters by the flag);
the candidate page lists the best matches with a one-click "Reject as duplicate of ...".
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

from django.db.models import Q

from powercontext import search
from powercontext.core import families
from powercontext.core.models import ArtifactRevision
from powercontext.search.fulltext.languages import ENGLISH
from review.models import Candidate
from review.selectors import near_window, nearness
from review.selectors.near_window import APPROVED_BYTES, APPROVED_SCAN, PENDING_SCAN, Member, Order
from review.selectors.nearness import SKETCH, sketch, terms

__all__ = ["APPROVED_BYTES", "APPROVED_SCAN", "PENDING_SCAN", "SKETCH", "sketch", "terms"]

APPROVED_SEARCH = 8  # ranked approved Experience heads compared on the candidate page
SHOWN = 5  # matches the candidate page lists
SHOWN_FLOOR = 0.2  # below this similarity a match is not worth a reviewer's look
NONE = -1  # a primary key no row has


@dataclass(frozen=True)
class Similar:
    """One Experience or Skill similar to the proposal: an approved head (``artifact_id``/
    ``revision``) or a pending candidate (``candidate_pk``). For an approved head,
    ``candidate_pk`` is the candidate whose approval wrote that revision, when it is known.
    ``earlier``: it came before the proposal (so the proposal is the copy to flag)."""

    status: str  # "approved" or "pending"
    similarity: float
    title: str
    artifact_id: str | None = None
    revision: int | None = None
    candidate_pk: int | None = None
    candidate_id: str | None = None
    artifact_pk: int | None = None
    earlier: bool = True
    family: str = "experience"

    @property
    def percent(self) -> int:
        return int(self.similarity * 100)

    @property
    def near_duplicate(self) -> bool:
        return self.similarity >= near_window.threshold()

    @property
    def short(self) -> str:
        return str(self.artifact_id) if self.status == "approved" else f"#{self.candidate_pk}"

    @property
    def label(self) -> str:
        if self.status == "approved":
            return f"approved {self.family.capitalize()} {self.artifact_id} (revision {self.revision})"
        return f"pending candidate #{self.candidate_pk} ({self.candidate_id})"

    @property
    def reject_reason(self) -> str:
        """The reason "Reject as duplicate of ..." records: names the other one exactly."""
        return f"Duplicate of {self.label}."


def forget_digests() -> None:
    """Nothing to forget: pending versions are compared by the sketches stored with them. Kept
    for the callers that empty it before measuring (tests, ``bench_review_queue``)."""


def similarity(a: set[str] | frozenset[str], b: set[str] | frozenset[str]) -> float:
    """Plain Jaccard similarity of two term sets (0 when either is empty)."""
    return len(a & b) / len(a | b) if a and b else 0.0


def sketch_similarity(a: Sequence[int], a_count: int, b: Sequence[int], b_count: int) -> float:
    """Unweighted similarity of two stored sketches (exact up to ``SKETCH`` terms each)."""
    weights = nearness.Weights.uniform()
    return nearness.score(
        nearness.sketched(a, a_count, weights), nearness.sketched(b, b_count, weights), weights
    )


def _title(family: str, proposal: Any) -> str:
    spec = families.PROPOSAL_FAMILIES.get(family)
    text = proposal.get(spec.title_field, "") if spec and isinstance(proposal, dict) else ""
    line = next((part.strip() for part in str(text).splitlines() if part.strip()), "")
    return line if len(line) <= 160 else line[:159].rstrip() + "…"


def _as_similar(member: Member, score: float, family: str, order: Order | None) -> Similar:
    return Similar(
        status=member.status,
        similarity=score,
        title=member.title,
        artifact_id=member.artifact_id,
        revision=member.revision,
        candidate_pk=member.pk,
        candidate_id=member.candidate_id,
        artifact_pk=member.artifact_pk,
        earlier=order is None or near_window.earlier(member.order, order),
        family=family,
    )


def similar_proposals(
    *,
    family: str,
    scope_id: str,
    proposal: Mapping[str, Any],
    exclude_candidate: int | None = None,
    exclude_artifacts: Iterable[str] = (),
    order: Order | None = None,
) -> list[Similar]:
    """Every compared proposal of the scope's window with its similarity to ``proposal``, most
    similar first (ties: approved first, then oldest). ``order``: the proposal's own place (a
    pending candidate's), None for a new proposal (everything compared came earlier)."""
    mine = terms(proposal, family)
    if not mine:
        return []
    skip = set(exclude_artifacts)
    extra: list[tuple[str, str, Member]] = []
    if family == Candidate.Family.EXPERIENCE:
        query = " ".join(families.EXPERIENCE.searchable_values(proposal))
        # Candidates for the sketch comparison below, which decides: English stop words are
        # enough here, and the Inbox never loads the language identifier (issue 22: no heavy
        # import on its path).
        for hit in search.search_experience(scope_id, query, APPROVED_SEARCH, language=ENGLISH):
            content = hit.content.as_mapping()
            member = near_window.approved_member(
                hit.key, hit.artifact_ref.artifact_id, hit.artifact_ref.revision, terms(content, family)
            )
            member.title = _title(family, content)
            extra.append((family, scope_id, member))
    own = Member("pending", order or (2, None, 0), sketch(mine), len(mine), pk=exclude_candidate or 0)
    extra.append((family, scope_id, own))
    window = near_window.windows((family,), [scope_id], extra)[family, scope_id]
    mine_sketched = window.sketch_of(own.hashes, own.count)
    found = [
        _as_similar(m, nearness.score(mine_sketched, m.sketch, window.weights), family, order)
        for m in window.members
        if m is not own
        and m.sketch is not None
        and (m.pk is None or m.pk != exclude_candidate)
        and m.artifact_id not in skip
    ]
    found.sort(key=lambda s: (-s.similarity, s.status != "approved", s.candidate_pk or 0))
    return found


def similar_experiences(
    *,
    scope_id: str,
    proposal: Mapping[str, Any],
    exclude_candidate: int | None = None,
    exclude_artifacts: Iterable[str] = (),
) -> list[Similar]:
    """``similar_proposals`` for an Experience (a new proposal: everything came earlier)."""
    return similar_proposals(
        family=Candidate.Family.EXPERIENCE,
        scope_id=scope_id,
        proposal=proposal,
        exclude_candidate=exclude_candidate,
        exclude_artifacts=exclude_artifacts,
    )


def is_near_duplicate(scope_id: str, proposal: Mapping[str, Any], family: str = "experience") -> bool:
    """Whether an approved or pending proposal of the scope says the same thing as ``proposal``
    (a new proposal: any near-duplicate came earlier)."""
    found = similar_proposals(family=family, scope_id=scope_id, proposal=proposal)
    return any(s.near_duplicate for s in found)


def _with_titles(family: str, shown: list[Similar]) -> list[Similar]:
    """Titles for the shown pending candidates and approved heads that have none, and the
    candidate whose approval wrote each shown approved revision: always three queries (the
    ``NONE`` key matches no row), so the page costs the same whatever it shows."""
    pending_pks = [s.candidate_pk for s in shown if s.status == "pending" and s.candidate_pk is not None]
    rows = Candidate.objects.filter(pk__in=[*pending_pks, NONE]).values_list("pk", "latest__proposal")
    titles: dict[Any, str] = {("pending", pk): _title(family, proposal) for pk, proposal in rows}
    match = Q(pk=NONE)
    for s in shown:
        if s.status == "approved" and not s.title:
            match |= Q(head_id=s.artifact_pk, revision=s.revision)
    revisions = ArtifactRevision.objects.filter(match).values_list("head_id", "revision", "content")
    titles.update({("approved", head, rev): _title(family, content) for head, rev, content in revisions})
    heads = [s.artifact_pk for s in shown if s.artifact_pk is not None]
    approvers: dict[tuple[int | None, int | None], int] = {
        (head, revision): pk
        for head, revision, pk in Candidate.objects.filter(
            result_head_id__in=[*heads, NONE], status=Candidate.Status.APPROVED
        ).values_list("result_head_id", "result_revision", "pk")
    }
    out = []
    for s in shown:
        if s.status == "pending":
            out.append(replace(s, title=titles.get(("pending", s.candidate_pk), "")))
        else:
            title = s.title or titles.get(("approved", s.artifact_pk, s.revision), "")
            out.append(replace(s, title=title, candidate_pk=approvers.get((s.artifact_pk, s.revision))))
    return out


class SimilarList(list[Similar]):
    """The candidate page's matches, most similar first, with the one it is a later copy of."""

    @property
    def duplicate_of(self) -> Similar | None:
        return duplicate_of(self)


def candidate_similar(candidate: Candidate, *, limit: int = SHOWN) -> SimilarList:
    """The proposals most similar to a pending candidate's current version (at most ``limit``,
    at least ``SHOWN_FLOOR`` similar), excluding itself and its own target; each says whether it
    came earlier. A fixed number of queries and bounded work, whatever the size of the scope;
    nothing for a decided candidate."""
    latest = candidate.latest
    if (
        candidate.status != Candidate.Status.PENDING
        or latest is None
        or not isinstance(latest.proposal, dict)
    ):
        return SimilarList()
    target = latest.target.get("artifact_id") if isinstance(latest.target, dict) else None
    found = similar_proposals(
        family=candidate.family,
        scope_id=candidate.scope_id,
        proposal=latest.proposal,
        exclude_candidate=candidate.pk,
        exclude_artifacts=[target] if target else [],
        order=near_window.pending_order(candidate.created_at, candidate.pk),
    )
    shown = [s for s in found if s.similarity >= SHOWN_FLOOR][:limit]
    return SimilarList(_with_titles(candidate.family, shown))


def duplicate_of(similar: Sequence[Similar]) -> Similar | None:
    """The earlier near-duplicate a candidate is the later copy of (the most similar), if any."""
    return next((s for s in similar if s.near_duplicate and s.earlier), None)


_MEMO: ContextVar[dict[int, Similar | None] | None] = ContextVar("near_duplicate_flags", default=None)


@contextmanager
def flags_memo() -> Iterator[None]:
    """Within the block, ``near_duplicate_flags`` computes each candidate's flag once (a read-only
    request: the queue's ``?near=1`` filter, the family counts and the page ask for the same
    rows)."""
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


def near_duplicate_flags(candidates: Sequence[Candidate]) -> dict[int, Similar | None]:
    """The queue's row flag: for each pending Experience or Skill candidate of one page
    (``latest`` selected), the earlier near-duplicate it is the later copy of (the most
    similar; None when it has none: it is no copy, or it is the earlier of its pair). Its own
    target is excluded. A fixed number of queries per family (``near_window``); a match outside
    the window goes unflagged (the candidate page also searches approved Experiences). Within ``flags_memo``, each candidate's flag is computed once."""
    memo = _MEMO.get()
    if memo is None:
        return _near_duplicate_flags(candidates)
    missing = [c for c in candidates if c.pk not in memo]
    if missing:
        memo.update(_near_duplicate_flags(missing))
    return {c.pk: memo[c.pk] for c in candidates if c.pk in memo}


def _near_duplicate_flags(candidates: Sequence[Candidate]) -> dict[int, Similar | None]:
    page = [
        c
        for c in candidates
        if c.family in near_window.FAMILIES and c.status == Candidate.Status.PENDING and c.latest_id
    ]
    if not page:
        return {}
    limit = near_window.threshold()
    extra = [(c.family, c.scope_id, _member_of(c)) for c in page]
    found = near_window.windows(near_window.FAMILIES, [c.scope_id for c in page], extra)
    flags: dict[int, Similar | None] = {}
    for candidate in page:
        window = found.get((candidate.family, candidate.scope_id))
        flags[candidate.pk] = _flag(candidate, window, limit, candidate.family) if window else None
    return flags


def _member_of(candidate: Candidate) -> Member:
    latest = candidate.latest
    hashes = (latest.terms_sketch if latest is not None else None) or []
    count = (latest.terms_count if latest is not None else None) or 0
    order = near_window.pending_order(candidate.created_at, candidate.pk)
    return Member("pending", order, list(hashes), count, pk=candidate.pk, candidate_id=candidate.candidate_id)


def _flag(candidate: Candidate, window: near_window.Window, limit: float, family: str) -> Similar | None:
    me = window.index.get(candidate.pk)
    if me is None or me.sketch is None:
        return None
    latest = candidate.latest
    target = latest.target.get("artifact_id") if latest and isinstance(latest.target, dict) else None
    best: tuple[float, Member] | None = None
    for other in window.near_candidates(me, limit):
        if other is me or other.sketch is None or (target and other.artifact_id == target):
            continue
        if not near_window.earlier(other.order, me.order) or not nearness.may_reach(
            me.sketch, other.sketch, limit
        ):
            continue
        value = nearness.score(me.sketch, other.sketch, window.weights)
        if value < limit:
            continue
        if (
            best is None
            or value > best[0]
            or (value == best[0] and near_window.earlier(other.order, best[1].order))
        ):
            best = (value, other)
    return _as_similar(best[1], best[0], family, me.order) if best else None
