"""Near-duplicate Experiences: the approved heads and pending candidates of a scope that say the
same thing as a proposal.

One rule for the whole product: approved Experiences are found through the product's own ranked
search (``search.search_experience``, the index prepare recalls from), pending ones by scanning
the scope's newest pending candidates (they have no index rows); both are then scored by the
Jaccard similarity of their analyzer terms over the family's searchable fields. The pipeline's
Phase 2 skips a proposal with any match at ``NEAR_DUPLICATE`` or above; the Inbox's candidate
page lists the best matches with a one-click "Reject as duplicate of ...".
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from threading import Lock
from typing import Any

from powercontext import search
from powercontext.core import families
from powercontext.core.recall import recallable_experience_heads
from powercontext.search import analyzer
from review.models import Candidate, CandidateVersion

NEAR_DUPLICATE = 0.8  # Jaccard similarity of analyzer terms at or above which two Experiences are one
PENDING_SCAN = 500  # newest pending candidates of the scope compared (one query)
APPROVED_SEARCH = 8  # ranked approved heads compared
APPROVED_SCAN = 500  # newest approved heads of a queue page's scopes compared by the row flag
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


@dataclass(frozen=True)
class _Digest:
    """What the comparison needs of one candidate version: its terms and its title."""

    terms: frozenset[str]
    title: str


# Candidate versions are immutable (insert-only), so their digests can be kept per process,
# keyed by (candidate_id, version): candidate ids are random, so a key never names another text,
# even where a database reuses row ids (a restore, a test rollback). The pending scan then reads
# and analyzes each version's proposal once; later scans read only small rows.
_DIGESTS: OrderedDict[tuple[str, int], _Digest] = OrderedDict()
_DIGESTS_MAX = 2 * PENDING_SCAN
_DIGESTS_LOCK = Lock()


def forget_digests() -> None:
    """Empty the process cache (tests measure query counts from a cold cache)."""
    with _DIGESTS_LOCK:
        _DIGESTS.clear()


def _digests(versions: list[tuple[str, int, int]]) -> dict[tuple[str, int], _Digest]:
    """The digest of each ``(candidate_id, version, version row pk)``: from the process cache,
    the rest read in one query."""
    known: dict[tuple[str, int], _Digest] = {}
    with _DIGESTS_LOCK:
        for candidate_id, number, _ in versions:
            if (digest := _DIGESTS.get((candidate_id, number))) is not None:
                _DIGESTS.move_to_end((candidate_id, number))
                known[candidate_id, number] = digest
    missing = {
        row_pk: (candidate_id, number)
        for candidate_id, number, row_pk in versions
        if (candidate_id, number) not in known
    }
    if not missing:
        return known
    read = {
        missing[row_pk]: _Digest(terms=frozenset(terms(proposal)), title=_title(proposal))
        for row_pk, proposal in CandidateVersion.objects.filter(pk__in=list(missing)).values_list(
            "pk", "proposal"
        )
    }
    with _DIGESTS_LOCK:
        _DIGESTS.update(read)
        while len(_DIGESTS) > _DIGESTS_MAX:
            _DIGESTS.popitem(last=False)
    return known | read


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
    approved first, then oldest). Two queries (the ranked search, the pending scan) and a third
    for pending versions not yet in the process cache."""
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
    rows = list(
        pending.filter(latest__isnull=False)
        .order_by("-pk")
        .values_list("pk", "candidate_id", "version", "latest_id")[:PENDING_SCAN]
    )
    digests = _digests([(candidate_id, number, latest) for _, candidate_id, number, latest in rows])
    for pk, candidate_id, number, _ in rows:
        digest = digests.get((candidate_id, number))
        if digest is None:
            continue
        found.append(
            Similar(
                status="pending",
                similarity=similarity(mine, digest.terms),
                title=digest.title,
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
    ones carry the candidate whose approval wrote them. At most three queries, whatever the size
    of the scope (one more the first time a pending version is compared in this process); nothing
    for a Skill or a decided candidate."""
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
    page costs a fixed number of queries whatever its size: the newest ``PENDING_SCAN`` pending
    Experiences and ``APPROVED_SCAN`` approved heads of the page's scopes, plus one for pending
    versions not yet in the process cache. A match outside those windows goes unflagged (the
    candidate page searches the whole scope)."""
    page = [
        c
        for c in candidates
        if c.family == Candidate.Family.EXPERIENCE and c.status == Candidate.Status.PENDING and c.latest_id
    ]
    if not page:
        return {}
    scopes = sorted({c.scope_id for c in page})
    pending = list(
        Candidate.objects.filter(
            scope_id__in=scopes,
            family=Candidate.Family.EXPERIENCE,
            status=Candidate.Status.PENDING,
            latest__isnull=False,
        )
        .order_by("-pk")
        .values_list("pk", "scope_id", "candidate_id", "version", "latest_id")[:PENDING_SCAN]
    )
    scanned = {row[0] for row in pending}
    pending += [
        (c.pk, c.scope_id, c.candidate_id, c.version, c.latest_id or 0) for c in page if c.pk not in scanned
    ]
    digests = _digests([(candidate_id, number, latest) for _, _, candidate_id, number, latest in pending])
    others: defaultdict[str, list[tuple[int | str, frozenset[str]]]] = defaultdict(list)
    for pk, scope_id, candidate_id, number, _ in pending:
        if (digest := digests.get((candidate_id, number))) is not None:
            others[scope_id].append((pk, digest.terms))
    heads = (
        recallable_experience_heads()
        .filter(scope_id__in=scopes)
        .order_by("-pk")
        .values_list("scope_id", "artifact_id", "searchable_text")[:APPROVED_SCAN]
    )
    for scope_id, artifact_id, text in heads:
        others[scope_id].append((artifact_id, frozenset(text.split())))
    flags: dict[int, bool] = {}
    for candidate in page:
        digest = digests.get((candidate.candidate_id, candidate.version))
        latest = candidate.latest
        target = latest.target.get("artifact_id") if latest and isinstance(latest.target, dict) else None
        mine = digest.terms if digest is not None else frozenset()
        # Jaccard >= t needs the smaller set to hold at least t of the larger: sizes first.
        low, high = len(mine) * NEAR_DUPLICATE, len(mine) / NEAR_DUPLICATE
        flags[candidate.pk] = bool(mine) and any(
            low <= len(theirs) <= high
            and key not in (candidate.pk, target)
            and similarity(mine, theirs) >= NEAR_DUPLICATE
            for key, theirs in others[candidate.scope_id]
        )
    return flags
