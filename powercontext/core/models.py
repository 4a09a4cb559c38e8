"""Authoritative tables of the core domain.

Rows here are the only source of truth; search indexes are projections rebuilt from them.
Invariants that the database can hold are declared as constraints, so a bug in a service cannot
write an inconsistent row.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from powercontext.core.families import MEMORY_ARTIFACT_ID as MEMORY_ARTIFACT_ID
from powercontext.core.families import Family

SCOPE_MAX_LENGTH = 256
ID_MAX_LENGTH = 128

MEMORY_FAMILY = Family.MEMORY.value


class PkNamedModel(models.Model):
    """Shown as its verbose name and primary key ("memory entry #12"): admin lists and log lines
    name the row, never its content."""

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self._meta.verbose_name} #{self.pk}"


class ScopeState(PkNamedModel):
    """Per-scope counters. One row per scope that has ever captured a Source."""

    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH, unique=True)
    last_source_position = models.BigIntegerField(default=0)


# The identity that owns what a caller keeps for itself (session recovery notes, captured
# sources): ``token:<pk>`` for a token's calls, ``local`` for every tokenless call (the embedded,
# single-user default, where tokens are optional). Rows from before ownership existed are local.
LOCAL_OWNER = "local"
OWNER_MAX_LENGTH = 32


def owner_key(token: ApiToken | None) -> str:
    """The owner identity of a caller holding ``token`` (None: a tokenless call)."""
    return LOCAL_OWNER if token is None else f"token:{token.pk}"


class Source(models.Model):
    """Captured evidence, idempotent by (scope, source_type, source_id), stored redacted. Never
    overwritten, except by the re-redaction of rows whose ``redaction_version`` is older than the
    detectors' (``manage.py redact_sources`` and its Celery sweep; 0: stored before versions)."""

    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH)
    source_type = models.CharField(max_length=64)
    source_id = models.CharField(max_length=256)
    content = models.TextField()
    content_sha256 = models.CharField(max_length=64)
    metadata = models.JSONField(null=True, blank=True)
    position = models.BigIntegerField()
    # Who captured it (``owner_key``): a session's history is the sources its reader captured.
    captured_by = models.CharField(max_length=OWNER_MAX_LENGTH, default=LOCAL_OWNER)
    redaction_version = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["scope_id", "source_type", "source_id"], name="source_identity_unique"
            ),
            models.UniqueConstraint(fields=["scope_id", "position"], name="source_position_unique"),
            models.CheckConstraint(condition=Q(position__gte=1), name="source_position_positive"),
        ]
        indexes = [
            # The re-redaction sweep finds the rows stored under an older detector version.
            models.Index(fields=["redaction_version"], name="source_redaction_version"),
        ]

    def __str__(self) -> str:
        return f"source #{self.pk} ({self.source_type})"


class Artifact(models.Model):
    """An artifact's identity and its head: the current revision and lifecycle state.

    The head moves only by compare-and-swap on ``current_revision`` (see services). For
    Experience the head also carries the deterministic ``searchable_text`` that retrieval reads.
    ``recallable`` says whether prepare may recall the head (an approved, active Experience with
    search text; ``powercontext.core.recall.is_recallable``); the artifact kernel sets it
    in the same write as ``state`` and ``searchable_text``, and every recall query filters on it.
    """

    class State(models.TextChoices):
        ACTIVE = "active"
        RETIRED = "retired"

    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH)
    family = models.CharField(max_length=ID_MAX_LENGTH)
    artifact_id = models.CharField(max_length=ID_MAX_LENGTH)
    current_revision = models.PositiveIntegerField(default=0)
    state = models.CharField(max_length=16, choices=State.choices, default=State.ACTIVE)
    searchable_text = models.TextField(blank=True, default="")
    analyzer_version = models.PositiveIntegerField(default=0)
    recallable = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "artifact head"
        constraints = [
            models.UniqueConstraint(
                fields=["scope_id", "family", "artifact_id"], name="artifact_identity_unique"
            ),
        ]
        indexes = [
            models.Index(fields=["family", "scope_id"], name="artifact_family_scope"),
            # Recall reads the few recallable heads of one scope (or all of them: rebuild).
            models.Index(fields=["scope_id"], condition=Q(recallable=True), name="artifact_recallable_scope"),
        ]

    def __str__(self) -> str:
        return f"{self.family}/{self.artifact_id}@{self.current_revision}"


class ArtifactRevision(models.Model):
    """One immutable revision of an artifact. Inserted once, never updated or deleted;
    ``parent_revision`` is the revision it was written over (null for the first)."""

    head = models.ForeignKey(Artifact, on_delete=models.PROTECT, related_name="revisions")
    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH)
    family = models.CharField(max_length=ID_MAX_LENGTH)
    artifact_id = models.CharField(max_length=ID_MAX_LENGTH)
    revision = models.PositiveIntegerField()
    parent_revision = models.PositiveIntegerField(null=True, blank=True)
    # Memory: {"changes": [...]} (the compact change list of this revision).
    # Experience / Skill: the approved proposal fields.
    content = models.JSONField(default=dict)
    source_refs = models.JSONField(default=list)
    artifact_refs = models.JSONField(default=list)
    # The head's search text as this revision wrote it (approved Experience), kept for the audit:
    # what became searchable at the time. Empty when the revision wrote none.
    searchable_text = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["head", "revision"], name="artifact_revision_unique"),
            models.CheckConstraint(condition=Q(revision__gte=1), name="artifact_revision_positive"),
        ]
        indexes = [
            models.Index(fields=["scope_id", "family", "artifact_id", "revision"], name="revision_lookup"),
        ]

    def __str__(self) -> str:
        return f"{self.family}/{self.artifact_id}@{self.revision}"


class MemoryEntry(PkNamedModel):
    """A Memory entry's identity within a scope (its versions hold the content)."""

    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH)
    entry_id = models.CharField(max_length=ID_MAX_LENGTH)
    created_revision = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "memory entries"
        constraints = [
            models.UniqueConstraint(fields=["scope_id", "entry_id"], name="memory_entry_unique"),
        ]


class MemoryEntryVersion(PkNamedModel):
    """One immutable version of a Memory entry's content. Inserted once, never updated; the
    Memory revisions that hold it are recorded by ``MemoryMembership``."""

    entry = models.ForeignKey(MemoryEntry, on_delete=models.PROTECT, related_name="versions")
    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH)
    entry_version_id = models.CharField(max_length=ID_MAX_LENGTH)
    version = models.PositiveIntegerField()
    kind = models.CharField(max_length=ID_MAX_LENGTH)
    text = models.TextField()
    # sha256 of kind + NUL + text: finds a duplicate of an active entry without scanning text.
    content_sha256 = models.CharField(max_length=64)
    reason = models.TextField(null=True, blank=True)
    source_refs = models.JSONField(default=list)
    artifact_refs = models.JSONField(default=list)
    created_revision = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["scope_id", "content_sha256"], name="memory_version_content")]
        constraints = [
            models.UniqueConstraint(
                fields=["scope_id", "entry_version_id"], name="memory_entry_version_unique"
            ),
            models.UniqueConstraint(fields=["entry", "version"], name="memory_entry_version_number"),
            models.CheckConstraint(condition=Q(version__gte=1), name="memory_version_positive"),
        ]


class MemoryMembership(models.Model):
    """Which entry version was in which Memory revisions, as a half-open interval.

    A version with state ``state`` belongs to every revision R of its scope's Memory with
    ``from_revision <= R`` and (``to_revision`` is null or ``R < to_revision``). A write closes
    the intervals it changes and opens new ones, so it costs O(changed entries); the set of
    versions in any revision R stays answerable, which is what exact citations need.
    """

    class State(models.TextChoices):
        ACTIVE = "active"
        INACTIVE = "inactive"

    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH)
    entry = models.ForeignKey(MemoryEntry, on_delete=models.PROTECT, related_name="memberships")
    entry_version = models.ForeignKey(
        MemoryEntryVersion, on_delete=models.PROTECT, related_name="memberships"
    )
    state = models.CharField(max_length=16, choices=State.choices)
    from_revision = models.PositiveIntegerField()
    to_revision = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            # At most one open interval per entry: the head holds one version of each entry.
            models.UniqueConstraint(
                fields=["entry"], condition=Q(to_revision__isnull=True), name="membership_one_open"
            ),
            models.CheckConstraint(
                condition=Q(to_revision__isnull=True) | Q(to_revision__gt=models.F("from_revision")),
                name="membership_interval_valid",
            ),
        ]
        indexes = [
            models.Index(fields=["scope_id", "to_revision", "entry"], name="membership_head"),
            models.Index(fields=["entry_version", "from_revision"], name="membership_version"),
            # The head's active memberships of one scope, in id order, with their versions: what
            # a scope's whole vector read joins from. Without it PostgreSQL scanned the whole
            # table (every scope's memberships) for each cold scope.
            models.Index(
                fields=["scope_id", "id"],
                include=["entry_version"],
                condition=Q(to_revision__isnull=True, state="active"),
                name="membership_active",
            ),
        ]

    def __str__(self) -> str:
        return f"membership #{self.pk}"


class ApiToken(models.Model):
    """A bearer token bound to a user. Only its SHA-256 digest is stored.

    Privileges (docs/reviewers.md, "Tokens"): every token may read, capture sources, remember and
    revise Memory, and propose candidates, within its ``scopes``. Operator operations (retire a
    Memory entry, flush the pipeline) need ``role = operator`` or a reviewer's token; reviewer
    operations (approve, reject, revise a candidate) need a user with the review permission.
    """

    class Role(models.TextChoices):
        AGENT = "agent"
        OPERATOR = "operator"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=128, blank=True, default="")
    digest = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # The scope ids this token may read and write; empty: every scope (a token made without
    # --scope). Checked by ``Operation.call`` on every operation that carries a scope_id.
    scopes = models.JSONField(default=list, blank=True)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.AGENT)

    def __str__(self) -> str:
        return f"token {self.prefix}… of user #{self.user_id}"

    def allows_scope(self, scope_id: str) -> bool:
        return not self.scopes or scope_id in self.scopes


class MemorySearchDocument(PkNamedModel):
    """Derived search row for one *active* membership of a scope's current Memory head.

    A projection, never an authority: rebuilt from memberships at any time. ``terms`` holds the
    analyzed, scope-keyed index tokens in the backend's format (space-separated tokens on SQLite,
    feeding an external-content FTS5 table through triggers; a ``tsvector`` literal with positions
    on PostgreSQL, feeding a generated ``tsvector`` column with a GIN index). The vendor-specific
    parts are created by migration 0002.
    """

    membership = models.OneToOneField(
        MemoryMembership, on_delete=models.CASCADE, primary_key=True, related_name="search_document"
    )
    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH, db_index=True)
    terms = models.TextField()
    # Number of index tokens (BM25's document length; PostgreSQL ranks with it, FTS5 keeps its own).
    length = models.PositiveIntegerField(default=0)


class ExperienceSearchDocument(PkNamedModel):
    """Derived search row for one approved, current Experience head (its ``searchable_text``).

    Same storage format as ``MemorySearchDocument``; created for Experience heads only (never
    for pending candidates, historical revisions or Skills).
    """

    head = models.OneToOneField(
        Artifact, on_delete=models.CASCADE, primary_key=True, related_name="search_document"
    )
    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH, db_index=True)
    terms = models.TextField()
    length = models.PositiveIntegerField(default=0)  # as ``MemorySearchDocument.length``


class MemoryEntryVector(PkNamedModel):
    """Derived embedding of one entry version that is active in its scope's current head.

    A projection, never an authority (``powercontext.search.vectors`` writes, rebuilds and
    verifies it). Entry versions are immutable, so a vector never goes stale while its version
    stays active; ``model`` names the model that computed it. ``id`` grows with every insert,
    so a scope's largest id tells in-process caches that rows were added (a rebuild).
    """

    id = models.BigAutoField(primary_key=True)
    entry_version = models.OneToOneField(MemoryEntryVersion, on_delete=models.CASCADE, related_name="vector")
    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH)
    model = models.CharField(max_length=64)
    vector = models.BinaryField()  # float32 little-endian, unit length

    class Meta:
        indexes = [models.Index(fields=["scope_id", "id"], name="memory_vector_scope_id")]


class ExperienceVector(PkNamedModel):
    """Derived embedding of one recallable Experience head at its current revision (its
    ``searchable_text``, the text the full-text index uses). A projection like
    ``MemoryEntryVector``: the writer that moves or retires the head deletes it in its
    transaction; the embedder (or a ``sync`` writer) writes it for the head's new revision."""

    id = models.BigAutoField(primary_key=True)
    head = models.OneToOneField(Artifact, on_delete=models.CASCADE, related_name="experience_vector")
    revision = models.PositiveIntegerField()
    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH, db_index=True)
    model = models.CharField(max_length=64)
    vector = models.BinaryField()  # float32 little-endian, unit length


class ServiceHeartbeat(models.Model):
    """The last sign of life of a background process or probe, one row per name: ``worker:<node>``
    (each Celery worker, every ``POWERCONTEXT_WORKER_HEARTBEAT_SECONDS``), ``rebuild`` (an index
    rebuild or verify in progress), ``ready-probe`` (the readiness probe's write check). Names
    are fixed words and Celery node names, never request values."""

    name = models.CharField(max_length=200, primary_key=True)
    seen_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"heartbeat {self.name}"
