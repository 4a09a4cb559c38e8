"""The compared window of a scope: what a proposal is checked against for near-duplicates.

For one family and a set of scopes, a fixed number of queries whatever the queue holds: the
term sketches stored with the newest ``PENDING_SCAN`` pending candidates' versions (never their
proposals), and the content of the newest approved heads' current revisions (Experiences: at
most ``APPROVED_SCAN`` heads and ``APPROVED_BYTES`` characters of searchable text; Skills: the
newest ``SKILL_SCAN``). The window also gives the term
weights (``nearness.Weights``: words common across the scope count for less).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import OuterRef, Subquery
from django.db.models.functions import Length

from powercontext.core.models import Artifact, ArtifactRevision
from powercontext.core.recall import recallable_experience_heads
from review.models import Candidate
from review.selectors import nearness

PENDING_SCAN = 500  # newest pending candidates of the scopes compared (one query)
APPROVED_SCAN = 500  # newest approved Experience heads compared
APPROVED_BYTES = 1_000_000  # ... and at most this much text (measured on their searchable text)
SKILL_SCAN = 100  # newest approved Skill heads compared (their content is read)
NONE = -1  # a primary key no row has
DEFAULT_THRESHOLD = 0.4  # calibrated on powercontext/evaluation/data/near_duplicates.jsonl


def threshold() -> float:
    """The near-duplicate threshold: ``POWERCONTEXT_NEAR_DUPLICATE_THRESHOLD`` (default
    ``DEFAULT_THRESHOLD``), a weighted similarity in (0, 1]."""
    return float(getattr(settings, "POWERCONTEXT_NEAR_DUPLICATE_THRESHOLD", DEFAULT_THRESHOLD))


# Who came first: approved heads before every pending candidate, then proposal time, then id.
Order = tuple[int, datetime | None, int]
APPROVED_ORDER: Order = (0, None, 0)


def pending_order(created_at: datetime, pk: int) -> Order:
    return (1, created_at, pk)


def earlier(a: Order, b: Order) -> bool:
    """Whether ``a`` came before ``b``."""
    if a[0] != b[0]:
        return a[0] < b[0]
    if a[1] is not None and b[1] is not None and a[1] != b[1]:
        return a[1] < b[1]
    return a[2] < b[2]


@dataclass
class Member:
    """One compared proposal of the window: a pending candidate (``pk``) or an approved head
    (``artifact_id``, ``revision``, ``artifact_pk``)."""

    status: str  # "pending" or "approved"
    order: Order
    hashes: list[int]
    count: int
    pk: int | None = None
    candidate_id: str | None = None
    artifact_id: str | None = None
    revision: int | None = None
    artifact_pk: int | None = None
    title: str = ""
    sketch: nearness.Sketched | None = None

    @property
    def key(self) -> int | str:
        return self.pk if self.pk is not None else str(self.artifact_id)


@dataclass
class Window:
    """The members of one scope and the weights their sketches give."""

    members: list[Member] = field(default_factory=list)
    weights: nearness.Weights = field(default_factory=nearness.Weights.uniform)
    index: dict[int | str, Member] = field(default_factory=dict)
    _prefix: tuple[float, nearness.PrefixIndex] | None = None
    _position: dict[int, int] = field(default_factory=dict)

    def add(self, member: Member) -> None:
        same = self.index.get(member.key)
        if same is not None:
            same.title = same.title or member.title
        elif member.hashes:
            self.members.append(member)
            self.index[member.key] = member

    def seal(self) -> None:
        """Compute the weights and every member's weighted sketch (after the last ``add``)."""
        self.weights = nearness.Weights(m.hashes for m in self.members)
        for member in self.members:
            member.sketch = nearness.sketched(member.hashes, member.count, self.weights)

    def sketch_of(self, hashes: list[int], count: int) -> nearness.Sketched:
        return nearness.sketched(hashes, count, self.weights)

    def near_candidates(self, member: Member, limit: float) -> list[Member]:
        """The members that may score at least ``limit`` with ``member`` (one of them, after
        ``seal``): ``nearness.PrefixIndex``, built once per window and limit, so flagging every
        member costs about the pairs that share a rare word, not all pairs."""
        if self._prefix is None or self._prefix[0] != limit:
            sketches = [m.sketch or nearness.sketched([], 0, self.weights) for m in self.members]
            self._prefix = (limit, nearness.PrefixIndex(sketches, self.weights, limit))
            self._position = {id(m): number for number, m in enumerate(self.members)}
        index = self._prefix[1]
        number = self._position[id(member)]
        return [self.members[other] for other in sorted(index.candidates(number))]


Windows = dict[tuple[str, str], "Window"]  # by (family, scope)


def _pending(families: tuple[str, ...], scopes: list[str], into: Windows) -> None:
    rows = (
        Candidate.objects.filter(
            scope_id__in=scopes,
            family__in=families,
            status=Candidate.Status.PENDING,
            latest__terms_sketch__isnull=False,
        )
        .order_by("-pk")
        .values_list(
            "pk",
            "family",
            "scope_id",
            "candidate_id",
            "created_at",
            "latest__terms_sketch",
            "latest__terms_count",
        )[:PENDING_SCAN]
    )
    for pk, family, scope_id, candidate_id, created_at, hashes, count in rows:
        into[family, scope_id].add(
            Member(
                "pending",
                pending_order(created_at, pk),
                list(hashes or []),
                count or 0,
                pk=pk,
                candidate_id=candidate_id,
            )
        )


def _approved_experiences(scopes: list[str], into: Windows) -> None:
    heads = recallable_experience_heads().filter(scope_id__in=scopes)
    sizes = heads.annotate(size=Length("searchable_text")).order_by("-pk").values_list("pk", "size")
    chosen: list[int] = []
    spent = 0
    for head_pk, size in sizes[:APPROVED_SCAN]:
        spent += size or 0
        if spent > APPROVED_BYTES:
            break
        chosen.append(head_pk)
    rows = (
        heads.filter(pk__in=[*chosen, NONE])  # NONE: the query runs even when nothing is chosen
        .annotate(content=Subquery(_head_content()))
        .values_list("pk", "scope_id", "artifact_id", "current_revision", "content")
    )
    for head_pk, scope_id, artifact_id, revision, proposal in rows:
        found = nearness.terms(proposal, "experience")
        into["experience", scope_id].add(approved_member(head_pk, artifact_id, revision, found))


def _head_content() -> Any:
    """The content of a head's current revision (a subquery on ``Artifact``)."""
    return ArtifactRevision.objects.filter(head=OuterRef("pk"), revision=OuterRef("current_revision")).values(
        "content"
    )[:1]


def _approved_skills(scopes: list[str], into: Windows) -> None:
    rows = (
        Artifact.objects.filter(
            scope_id__in=scopes, family="skill", state=Artifact.State.ACTIVE, current_revision__gte=1
        )
        .annotate(content=Subquery(_head_content()))
        .order_by("-pk")
        .values_list("pk", "scope_id", "artifact_id", "current_revision", "content")[:SKILL_SCAN]
    )
    for head_pk, scope_id, artifact_id, revision, proposal in rows:
        found = nearness.terms(proposal, "skill")
        into["skill", scope_id].add(approved_member(head_pk, artifact_id, revision, found))


def approved_member(head_pk: int, artifact_id: str, revision: int, found: set[str]) -> Member:
    return Member(
        "approved",
        APPROVED_ORDER,
        nearness.sketch(found),
        len(found),
        artifact_id=artifact_id,
        revision=revision,
        artifact_pk=head_pk,
    )


FAMILIES: tuple[str, ...] = (Candidate.Family.EXPERIENCE, Candidate.Family.SKILL)


def windows(
    families: tuple[str, ...], scopes: Iterable[str], extra: Iterable[tuple[str, str, Member]] = ()
) -> Windows:
    """The window of each (family, scope) of ``families`` x ``scopes``: one query for the
    pending sketches of all of them, and the approved scans of each family asked for, whatever
    the window holds (``extra``: more (family, scope, member), e.g. the page's own candidates
    or search hits, added before the weights are computed)."""
    chosen = sorted(set(scopes))
    found: defaultdict[tuple[str, str], Window] = defaultdict(Window)
    if chosen:
        _pending(families, chosen, found)
        if Candidate.Family.EXPERIENCE in families:
            _approved_experiences(chosen, found)
        if Candidate.Family.SKILL in families:
            _approved_skills(chosen, found)
    for family, scope_id, member in extra:
        found[family, scope_id].add(member)
    for window in found.values():
        window.seal()
    return dict(found)
