"""Tables of the background pipeline (app ``pipeline``; the tables kept their ``powercontext_`` names).

Phase 1 keeps one job row and at most one output row per (scope, session), and one set-aside row
per source it isolated as unprocessable; Phase 2 keeps one
singleton job row per scope and one selection row per item it materialized. Counters are per
scope and outcome. Rows hold ids, states, positions and codes; only the output rows hold
(redacted) generated text.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

SCOPE_MAX_LENGTH = 256
SESSION_MAX_LENGTH = 300  # "source:" + a 256-char source id


class LeasedJob(models.Model):
    """What the Phase 1 and Phase 2 job rows share: a worker claims the row under a lease, and
    every later write of its run compares ``ownership_token`` (a new claim replaces the token,
    so a worker whose lease lapsed writes nothing). ``error_code``: the last failure's code."""

    ownership_token = models.CharField(max_length=64, blank=True, default="")
    worker_id = models.CharField(max_length=128, blank=True, default="")
    lease_until = models.DateTimeField(null=True, blank=True)
    error_code = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class PipelineJob(LeasedJob):
    """Phase 1 job of one session: claim state, lease, watermarks, retry budget, last outcome.

    ``isolating``: the session failed its whole retry budget for a reason its sources may cause,
    and the job is bisecting them (``extract.py``): the sources up to
    ``isolate_good`` are known to process, those up to ``isolate_bad`` to fail (0: unknown) with
    ``isolate_reason`` (the code a cornered source is set aside with), and the running attempt
    covers the sources up to ``probe_upto`` (0: not isolating).
    Positions exclude set-aside sources, so they stay valid when newer sources arrive."""

    class Status(models.TextChoices):
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        ISOLATING = "isolating"
        EXHAUSTED = "exhausted"

    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH)
    session_id = models.CharField(max_length=SESSION_MAX_LENGTH)
    status = models.CharField(max_length=16, choices=Status.choices)
    input_watermark = models.BigIntegerField(default=0)
    last_success_watermark = models.BigIntegerField(default=0)
    retry_budget = models.PositiveSmallIntegerField(default=3)
    retries_left = models.PositiveSmallIntegerField(default=3)
    backoff_until = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=32, blank=True, default="")
    usage = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    isolating = models.BooleanField(default=False)
    isolate_good = models.BigIntegerField(default=0)
    isolate_bad = models.BigIntegerField(default=0)
    isolate_reason = models.CharField(max_length=64, blank=True, default="")
    probe_upto = models.BigIntegerField(default=0)

    class Meta:
        db_table = "powercontext_pipelinejob"
        verbose_name = "pipeline phase 1 job"
        constraints = [
            models.UniqueConstraint(fields=["scope_id", "session_id"], name="pipeline_job_session_unique"),
            models.CheckConstraint(
                condition=Q(last_success_watermark__gte=0) & Q(input_watermark__gte=0),
                name="pipeline_job_watermarks_valid",
            ),
        ]
        indexes = [models.Index(fields=["status", "lease_until"], name="pipeline_job_running")]

    def __str__(self) -> str:
        return f"phase 1 job #{self.pk} ({self.status})"


class PipelineOutput(models.Model):
    """The current Phase 1 output of one session: redacted items citing its own sources.

    ``memories``: ``[{"kind", "text", "evidence": [source_id, ...]}]``; ``experiences``:
    ``[{"situation", "action", "outcome", "lesson", "evidence": [...]}]``. A newer watermark
    replaces the row; an older one never does. A no-op deletes it (forgetting).
    """

    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH)
    session_id = models.CharField(max_length=SESSION_MAX_LENGTH)
    watermark = models.BigIntegerField()
    memories = models.JSONField(default=list)
    experiences = models.JSONField(default=list)
    generator = models.CharField(max_length=32)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "powercontext_pipelineoutput"
        verbose_name = "pipeline phase 1 output"
        constraints = [
            models.UniqueConstraint(fields=["scope_id", "session_id"], name="pipeline_output_session_unique"),
        ]
        indexes = [models.Index(fields=["scope_id", "-watermark"], name="pipeline_output_recent")]

    def __str__(self) -> str:
        return f"phase 1 output #{self.pk}"


class PipelineSetAside(models.Model):
    """A source Phase 1 cannot process (it made every attempt that included it fail, or killed
    the worker), found by bisecting its session. Phase 1 leaves it out of every later projection
    of the session, so the session's other sources -- older and newer -- still become Memory. It
    is never retried. ``reason``: the failure code that condemned it (e.g. ``lease_expired``,
    ``generator_exception``, ``schema_invalid``); ids and codes only, never content."""

    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH)
    session_id = models.CharField(max_length=SESSION_MAX_LENGTH)
    source_id = models.CharField(max_length=256)
    position = models.BigIntegerField()
    reason = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "powercontext_pipelinesetaside"
        verbose_name = "pipeline set-aside source"
        constraints = [
            models.UniqueConstraint(fields=["scope_id", "source_id"], name="pipeline_set_aside_unique"),
        ]
        indexes = [models.Index(fields=["scope_id", "session_id"], name="pipeline_set_aside_session")]

    def __str__(self) -> str:
        return f"set-aside source #{self.pk} ({self.reason})"


class PipelineScopeJob(LeasedJob):
    """Phase 2 singleton of one scope: lease, token, heartbeat, cooldown, the last selection digest."""

    class Status(models.TextChoices):
        IDLE = "idle"
        RUNNING = "running"
        FAILED = "failed"

    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH, unique=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.IDLE)
    # Phase 1 changed an output since the last successful run (cleared by that run's commit).
    pending = models.BooleanField(default=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    cooldown_until = models.DateTimeField(null=True, blank=True)
    retry_count = models.PositiveIntegerField(default=0)
    selection_digest = models.CharField(max_length=64, blank=True, default="")
    last_success_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "powercontext_pipelinescopejob"
        verbose_name = "pipeline phase 2 job"

    def __str__(self) -> str:
        return f"phase 2 job #{self.pk} ({self.status})"


class PipelineSelection(models.Model):
    """One item of a scope's last successful Phase 2 selection and what it materialized to.

    ``item_key`` is the digest of the item's content, so the same fact from two sessions is one
    item. Memory items point at the entry they remembered (null: the head already held it, so
    the pipeline does not own it); Experience items at the candidate they proposed (null: a
    near-duplicate was found and nothing was proposed).
    """

    class Kind(models.TextChoices):
        MEMORY = "memory"
        EXPERIENCE = "experience"

    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    item_key = models.CharField(max_length=64)
    session_ids = models.JSONField(default=list)
    entry_id = models.CharField(max_length=128, null=True, blank=True)
    candidate_id = models.CharField(max_length=128, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "powercontext_pipelineselection"
        verbose_name = "pipeline selection item"
        constraints = [
            models.UniqueConstraint(
                fields=["scope_id", "kind", "item_key"], name="pipeline_selection_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"selection item #{self.pk} ({self.kind})"


class PipelineCounter(models.Model):
    """How often an outcome happened in a scope (ids and counts only, never content). One row
    per (scope, name), created on first use and then only incremented in place (an ``F()``
    update), so concurrent workers never lose a count."""

    class Name(models.TextChoices):
        CLAIMED = "claimed"
        OUTPUT = "output"
        NO_OUTPUT_FIRST = "no_output_first"
        NO_OUTPUT_DELETING = "no_output_deleting"
        SCHEMA_INVALID = "schema_invalid"
        FAILED = "failed"
        EXHAUSTED = "exhausted"
        SET_ASIDE = "set_aside"
        FORGOTTEN = "forgotten"
        PROPOSED = "proposed"
        DUPLICATE_SKIPPED = "duplicate_skipped"

    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH)
    name = models.CharField(max_length=32, choices=Name.choices)
    value = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "powercontext_pipelinecounter"
        verbose_name = "pipeline counter"
        constraints = [
            models.UniqueConstraint(fields=["scope_id", "name"], name="pipeline_counter_unique"),
        ]

    def __str__(self) -> str:
        return f"counter {self.name}"


class PipelineEnqueued(models.Model):
    """A Phase 1 message sent for a session and not yet taken by a worker (``until``: when the
    mark lapses, a lost message's session becomes eligible for a new one). The beat scan skips
    marked sessions, so a backed-up queue does not fill with duplicates."""

    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH)
    session_id = models.CharField(max_length=SESSION_MAX_LENGTH)
    until = models.DateTimeField()

    class Meta:
        db_table = "powercontext_pipelineenqueued"
        verbose_name = "pipeline queued session"
        constraints = [
            models.UniqueConstraint(
                fields=["scope_id", "session_id"], name="pipeline_enqueued_session_unique"
            )
        ]

    def __str__(self) -> str:
        return f"queued phase 1 #{self.pk}"
