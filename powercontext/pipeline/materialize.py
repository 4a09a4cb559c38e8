"""Phase 2 writes: one writer per scope materializes the current selection of Phase 1 outputs.

The singleton job row per scope carries a lease, an ownership token, a heartbeat and a success
cooldown. ``phase2_materialize`` is one transaction, fenced by the token: it reads the scope's
current outputs (not polluted, within retention by last use else last write, most used and
newest first, capped), compares them with the
previous selection (its rows are the "was selected" set, so "now missing" is a deletion signal),
writes ONE Memory revision through ``memory_apply_changes`` (remember new, retire forgotten),
proposes new Experiences as pending candidates, rejects pending pipeline candidates that were
forgotten, and records the new selection. Nothing changed: nothing is written. In the same
transaction it removes the session recovery notes of polluted sessions and of sessions whose notes
were last written before the retention (``powercontext.recovery.services``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q
from django.utils.crypto import salted_hmac

from powercontext.core import families
from powercontext.feedback.models import MEMORY, FeedbackCounter
from powercontext.memory.services import NewEntry, memory_apply_changes
from powercontext.memory.sources import CONTENT_SOURCE_TYPE
from powercontext.pipeline.config import PipelineConfig
from powercontext.pipeline.extract import counter_add
from powercontext.pipeline.models import PipelineCounter, PipelineOutput, PipelineScopeJob, PipelineSelection
from powercontext.pipeline.selectors import polluted_session_ids
from powercontext.recovery.services import notes_forget_within, notes_prune_within
from review.models import Candidate
from review.selectors.similar import is_near_duplicate
from review.services import Submission, candidate_propose_within, candidate_reject_within

logger = logging.getLogger("powercontext.pipeline")

PIPELINE_USERNAME = "powercontext-pipeline"
FORGOTTEN_REASON = "Rejected by the pipeline: every session this candidate cites was forgotten."
PROPOSAL_REASON = "Proposed by the background pipeline from captured sessions."
MEMORY_REASON = "pipeline"
MAX_REFS = 32
OPAQUE_REF_SALT = "powercontext.pipeline.memory-source-ref"


@dataclass(frozen=True)
class ScopeClaim:
    scope_id: str
    token: str


@dataclass
class Desired:
    kind: str
    fields: dict[str, str]
    evidence: list[str] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Materialized:
    """What one Phase 2 run did (``lost``: the token no longer owned the job)."""

    lost: bool = False
    revision: int | None = None
    remembered: int = 0
    retired: int = 0
    proposed: int = 0
    duplicates: int = 0
    rejected: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.remembered or self.retired or self.proposed or self.rejected)


@transaction.atomic(durable=True)
def phase2_claim(
    *, scope_id: str, worker_id: str, now: datetime, config: PipelineConfig, force: bool = False
) -> ScopeClaim | None:
    """Take the scope's Phase 2 lease, or None while another worker holds a valid lease or,
    unless ``force`` (an operator's explicit pass), while the success cooldown runs."""
    PipelineScopeJob.objects.bulk_create([PipelineScopeJob(scope_id=scope_id)], ignore_conflicts=True)
    job = PipelineScopeJob.objects.select_for_update().get(scope_id=scope_id)
    if job.status == PipelineScopeJob.Status.RUNNING and job.lease_until and job.lease_until > now:
        return None
    if not force and job.cooldown_until and job.cooldown_until > now:
        return None
    token = secrets.token_hex(16)
    PipelineScopeJob.objects.filter(pk=job.pk).update(
        status=PipelineScopeJob.Status.RUNNING,
        ownership_token=token,
        worker_id=worker_id[:128],
        lease_until=now + config.lease,
        heartbeat_at=now,
        error_code="",
    )
    return ScopeClaim(scope_id=scope_id, token=token)


@transaction.atomic(durable=True)
def phase2_heartbeat(*, claim: ScopeClaim, now: datetime, config: PipelineConfig) -> bool:
    """Extend the lease of a long run; False when the token lost the job."""
    return bool(
        PipelineScopeJob.objects.filter(
            scope_id=claim.scope_id, ownership_token=claim.token, status=PipelineScopeJob.Status.RUNNING
        ).update(heartbeat_at=now, lease_until=now + config.lease)
    )


@transaction.atomic(durable=True)
def phase2_fail(*, claim: ScopeClaim, now: datetime, config: PipelineConfig, error_code: str) -> None:
    """Record a failed run: the count grows, a short backoff (capped by the cooldown) follows,
    and the job is claimable again afterwards (a failure never blocks it forever)."""
    job = (
        PipelineScopeJob.objects.select_for_update()
        .filter(scope_id=claim.scope_id, ownership_token=claim.token)
        .first()
    )
    if job is None:
        return
    wait = min(config.backoff * (2 ** min(job.retry_count, 10)), max(config.cooldown, config.backoff))
    PipelineScopeJob.objects.filter(pk=job.pk).update(
        status=PipelineScopeJob.Status.FAILED,
        ownership_token="",
        lease_until=None,
        retry_count=job.retry_count + 1,
        error_code=error_code[:64],
        cooldown_until=now + wait,
    )
    logger.warning("pipeline phase2 failed job=%s error=%s", job.pk, error_code[:64])


def _key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text).strip()


def _add_use(into: dict[str, tuple[int, datetime]], key: str, uses: int, last: datetime) -> None:
    known = into.get(key)
    into[key] = (uses, last) if known is None else (known[0] + uses, max(known[1], last))


def session_use(scope_id: str) -> dict[str, tuple[int, datetime]]:
    """session id -> (uses, last use) of the Memory the pipeline materialized from the session,
    from the agents' feedback (``powercontext.feedback``): the uses of every version of each
    entry it remembered, and the newest use. Sessions nobody's memory was used from are absent."""
    by_entry: dict[str, tuple[int, datetime]] = {}
    for entry_id, uses, last in FeedbackCounter.objects.filter(
        scope_id=scope_id, family=MEMORY, uses__gt=0, last_used_at__isnull=False
    ).values_list("entry_version__entry__entry_id", "uses", "last_used_at"):
        if entry_id is not None and last is not None:
            _add_use(by_entry, entry_id, uses, last)
    if not by_entry:
        return {}
    by_session: dict[str, tuple[int, datetime]] = {}
    for owned, session_ids in PipelineSelection.objects.filter(
        scope_id=scope_id, kind=PipelineSelection.Kind.MEMORY, entry_id__in=sorted(by_entry)
    ).values_list("entry_id", "session_ids"):
        if owned is None:
            continue
        uses, last = by_entry[owned]
        for session_id in session_ids:
            _add_use(by_session, session_id, uses, last)
    return by_session


def _desired(
    scope_id: str, now: datetime, config: PipelineConfig, polluted: set[str]
) -> dict[tuple[str, str], Desired]:
    """The current selection: item (kind, key) -> its fields, evidence and sessions.

    Selection by use (seed 002, 5.7 and 6.1): a session's output stays while its recency —
    the last use of the Memory materialized from it, else its last write — is within the
    retention, so a pipeline memory agents keep using is kept past the window; the cap keeps
    the most used first, then the most recent."""
    cutoff = now - config.retention
    columns = ("session_id", "memories", "experiences", "updated_at", "watermark", "pk")
    current = PipelineOutput.objects.filter(scope_id=scope_id).exclude(session_id__in=sorted(polluted))
    # Without use, the newest outputs within the retention; SQL orders and caps them.
    rows = {
        row[0]: row
        for row in current.filter(updated_at__gte=cutoff)
        .order_by("-updated_at", "-watermark", "pk")
        .values_list(*columns)[: config.selection_cap]
    }
    used = session_use(scope_id)
    if used:
        # Every used session still within the retention by its last use or its last write joins
        # them; then the most used first, the most recent next.
        kept = sorted(session for session, (_, last) in used.items() if last >= cutoff)
        for row in current.filter(
            Q(session_id__in=kept) | Q(session_id__in=sorted(used), updated_at__gte=cutoff)
        ).values_list(*columns):
            rows[row[0]] = row

    def priority(row: tuple[Any, ...]) -> tuple[Any, ...]:
        session_id, _, _, updated_at, watermark, pk = row
        uses, last = used.get(session_id, (0, updated_at))
        return (-uses, -max(last, updated_at).timestamp(), -watermark, pk)

    outputs = [row[:3] for row in sorted(rows.values(), key=priority)[: config.selection_cap]]
    desired: dict[tuple[str, str], Desired] = {}
    for session_id, memories, experiences in outputs:
        items: list[tuple[str, dict[str, str], list[str]]] = []
        for m in memories:
            values = {"kind": _nfc(m["kind"]), "text": _nfc(m["text"])}
            items.append((PipelineSelection.Kind.MEMORY, values, m["evidence"]))
        for e in experiences:
            values = {name: _nfc(e[name]) for name in families.EXPERIENCE.field_names}
            items.append((PipelineSelection.Kind.EXPERIENCE, values, e["evidence"]))
        for kind, values, evidence in items:
            key = _key(kind, *values.values())
            item = desired.setdefault((kind, key), Desired(kind=kind, fields=values))
            item.evidence.extend(s for s in evidence if s not in item.evidence)
            if session_id not in item.sessions:
                item.sessions.append(session_id)
    return desired


def _digest(desired: dict[tuple[str, str], Desired]) -> str:
    canonical = sorted((kind, key, sorted(item.evidence)) for (kind, key), item in desired.items())
    return hashlib.sha256(json.dumps(canonical).encode("utf-8")).hexdigest()


def _refs(evidence: list[str]) -> list[dict[str, str]]:
    return [{"name": CONTENT_SOURCE_TYPE, "source_id": s} for s in sorted(set(evidence))[:MAX_REFS]]


def opaque_source_ref(scope_id: str, source_id: str) -> str:
    """``ref:`` and 32 hex digits of an HMAC (keyed by ``SECRET_KEY``) of the scope and source id:
    stable, so one source always gets the same reference, and not reversible without the key."""
    digest = salted_hmac(OPAQUE_REF_SALT, f"{scope_id}\0{source_id}", algorithm="sha256").hexdigest()
    return f"ref:{digest[:32]}"


def _memory_refs(scope_id: str, evidence: list[str]) -> list[dict[str, str]]:
    """The provenance of a pipeline Memory entry: its evidence by opaque reference. Every agent
    of the scope reads Memory, and a source id may carry its session id (``<session>:<turn>`` is
    the documented capture pattern), so Memory never names a source of a session directly; an
    operator finds the sources through the pipeline's selection rows."""
    return [
        {"name": ref["name"], "source_id": opaque_source_ref(scope_id, ref["source_id"])}
        for ref in _refs(evidence)
    ]


def pipeline_user() -> User:
    """The system reviewer the pipeline rejects forgotten candidates as (created on demand;
    inactive, no usable password: nobody can log in as it)."""
    user, created = User.objects.get_or_create(username=PIPELINE_USERNAME, defaults={"is_active": False})
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


@transaction.atomic(durable=True)
def phase2_materialize(*, claim: ScopeClaim, now: datetime, config: PipelineConfig) -> Materialized:
    """Materialize the scope's current selection (see the module docstring), fenced by the token."""
    scope_id = claim.scope_id
    job = (
        PipelineScopeJob.objects.select_for_update()
        .filter(scope_id=scope_id, ownership_token=claim.token, status=PipelineScopeJob.Status.RUNNING)
        .first()
    )
    if job is None:
        return Materialized(lost=True)
    polluted = polluted_session_ids(scope_id=scope_id, config=config)
    forgotten_outputs, _ = PipelineOutput.objects.filter(
        scope_id=scope_id, session_id__in=sorted(polluted)
    ).delete()
    forgotten_notes = notes_forget_within(scope_id=scope_id, session_ids=sorted(polluted))
    forgotten_notes += notes_prune_within(scope_id=scope_id, before=now - config.retention)
    desired = _desired(scope_id, now, config, polluted)
    digest = _digest(desired)
    result = Materialized()
    if digest != job.selection_digest:
        result = _apply(scope_id, desired, now)
    PipelineScopeJob.objects.filter(pk=job.pk).update(
        status=PipelineScopeJob.Status.IDLE,
        pending=False,
        ownership_token="",
        lease_until=None,
        retry_count=0,
        error_code="",
        selection_digest=digest,
        cooldown_until=now + config.cooldown,
        last_success_at=now,
    )
    logger.info(
        "pipeline phase2 done job=%s remembered=%s retired=%s proposed=%s duplicates=%s rejected=%s polluted_outputs=%s forgotten_note_sessions=%s",
        job.pk,
        result.remembered,
        result.retired,
        result.proposed,
        result.duplicates,
        result.rejected,
        forgotten_outputs,
        forgotten_notes,
    )
    return result


def _apply(scope_id: str, desired: dict[tuple[str, str], Desired], now: datetime) -> Materialized:
    selected = {(row.kind, row.item_key): row for row in PipelineSelection.objects.filter(scope_id=scope_id)}
    new = [k for k in desired if k not in selected]
    gone = [selected[k] for k in sorted(selected) if k not in desired]
    remember = [
        NewEntry(
            key=key,
            kind=desired[(kind, key)].fields["kind"],
            text=desired[(kind, key)].fields["text"],
            source_refs=_memory_refs(scope_id, desired[(kind, key)].evidence),
        )
        for kind, key in new
        if kind == PipelineSelection.Kind.MEMORY
    ]
    retire = [row.entry_id for row in gone if row.kind == PipelineSelection.Kind.MEMORY and row.entry_id]
    batch = memory_apply_changes(
        scope_id=scope_id, remember=remember, retire_entry_ids=retire, reason=MEMORY_REASON
    )
    rows = [
        PipelineSelection(
            scope_id=scope_id,
            kind=PipelineSelection.Kind.MEMORY,
            item_key=entry.key,
            session_ids=desired[(PipelineSelection.Kind.MEMORY, entry.key)].sessions,
            entry_id=batch.added.get(entry.key),
        )
        for entry in remember
    ]
    proposed = duplicates = 0
    for kind, key in new:
        if kind != PipelineSelection.Kind.EXPERIENCE:
            continue
        item = desired[(kind, key)]
        candidate_id = None
        if is_near_duplicate(scope_id, item.fields):
            duplicates += 1
        else:
            candidate = candidate_propose_within(
                scope_id=scope_id,
                family=Candidate.Family.EXPERIENCE,
                submission=Submission(
                    proposal=dict(item.fields),
                    source_refs=_refs(item.evidence),
                    artifact_refs=[],
                    target=None,
                    reason=PROPOSAL_REASON,
                ),
            )
            candidate_id = candidate.candidate_id
            proposed += 1
        rows.append(
            PipelineSelection(
                scope_id=scope_id,
                kind=kind,
                item_key=key,
                session_ids=item.sessions,
                candidate_id=candidate_id,
            )
        )
    rejected = _reject_forgotten(scope_id, [row.candidate_id for row in gone if row.candidate_id])
    PipelineSelection.objects.filter(pk__in=[row.pk for row in gone]).delete()
    PipelineSelection.objects.bulk_create(rows)
    counter_add(scope_id, PipelineCounter.Name.FORGOTTEN, len(gone))
    counter_add(scope_id, PipelineCounter.Name.PROPOSED, proposed)
    counter_add(scope_id, PipelineCounter.Name.DUPLICATE_SKIPPED, duplicates)
    return Materialized(
        revision=batch.revision,
        remembered=sum(1 for v in batch.added.values() if v),
        retired=len(batch.retired),
        proposed=proposed,
        duplicates=duplicates,
        rejected=rejected,
    )


def _reject_forgotten(scope_id: str, candidate_ids: list[str]) -> int:
    pending: list[Any] = list(
        Candidate.objects.filter(
            scope_id=scope_id, candidate_id__in=sorted(candidate_ids), status=Candidate.Status.PENDING
        ).values_list("candidate_id", "version")
    )
    if not pending:
        return 0
    reviewer = pipeline_user()
    for candidate_id, version in pending:
        candidate_reject_within(
            scope_id=scope_id,
            candidate_id=candidate_id,
            expected_version=version,
            reason=FORGOTTEN_REASON,
            reviewer=reviewer,
        )
    return len(pending)
