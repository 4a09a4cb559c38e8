"""Tables of prepare: the hourly audit aggregates (app ``prepare``; the table kept its
``powercontext_`` name when it moved here from the core app)."""

from __future__ import annotations

from django.db import models

from powercontext.core.models import SCOPE_MAX_LENGTH, PkNamedModel

# Latency histogram of prepare: the upper bound (ms) of each bucket but the last, which is open.
PREPARE_LATENCY_BOUNDS_MS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)


class PrepareAggregate(PkNamedModel):
    """What the prepares of one scope did in one UTC hour with one search mode: counts and sums
    only. Never a query, a text, an entry id or a citation (README "Prepare aggregates").

    Written only by ``prepare_aggregates_add`` (one ``INSERT … ON CONFLICT DO UPDATE`` per row,
    adding to every counter), never on a prepare's request path; pruned by age.
    """

    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH)
    hour = models.DateTimeField()  # the start of the UTC hour
    search_mode = models.CharField(max_length=16)
    prepares = models.BigIntegerField(default=0)
    empty = models.BigIntegerField(default=0)  # prepares that admitted nothing
    memory_candidates = models.BigIntegerField(default=0)
    experience_candidates = models.BigIntegerField(default=0)
    memory_admitted = models.BigIntegerField(default=0)
    experience_admitted = models.BigIntegerField(default=0)
    duplicates = models.BigIntegerField(default=0)
    skipped_blank = models.BigIntegerField(default=0)
    skipped_unencodable = models.BigIntegerField(default=0)
    skipped_item_limit = models.BigIntegerField(default=0)
    skipped_total_item_limit = models.BigIntegerField(default=0)
    skipped_over_budget = models.BigIntegerField(default=0)
    skipped_window = models.BigIntegerField(default=0)
    skipped_below_floor = models.BigIntegerField(default=0)  # below the relevance floor
    skipped_held = models.BigIntegerField(default=0)  # held out by agents' reports
    skipped_below_cut = models.BigIntegerField(default=0)  # after the pack's cut
    truncated_source_cap = models.BigIntegerField(default=0)
    truncated_budget = models.BigIntegerField(default=0)
    content_bytes = models.BigIntegerField(default=0)  # sum over the prepares
    max_bytes = models.BigIntegerField(default=0)  # sum of the budgets asked for
    latency_us = models.BigIntegerField(default=0)  # sum, microseconds
    latency_le_1ms = models.BigIntegerField(default=0)
    latency_le_2ms = models.BigIntegerField(default=0)
    latency_le_5ms = models.BigIntegerField(default=0)
    latency_le_10ms = models.BigIntegerField(default=0)
    latency_le_20ms = models.BigIntegerField(default=0)
    latency_le_50ms = models.BigIntegerField(default=0)
    latency_le_100ms = models.BigIntegerField(default=0)
    latency_le_200ms = models.BigIntegerField(default=0)
    latency_le_500ms = models.BigIntegerField(default=0)
    latency_le_1000ms = models.BigIntegerField(default=0)
    latency_over_1000ms = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField()

    class Meta:
        db_table = "powercontext_prepareaggregate"
        verbose_name = "prepare aggregate"
        constraints = [
            models.UniqueConstraint(
                fields=["scope_id", "hour", "search_mode"], name="prepare_aggregate_bucket"
            ),
        ]
        indexes = [models.Index(fields=["hour"], name="prepare_aggregate_hour")]
        permissions = [
            ("explain_prepare", "Can explain a prepare (candidates, decisions and sizes)"),
        ]


# Every counter of a bucket, in the order the flusher adds them (the unique key excluded).
PREPARE_AGGREGATE_COUNTERS = (
    "prepares",
    "empty",
    "memory_candidates",
    "experience_candidates",
    "memory_admitted",
    "experience_admitted",
    "duplicates",
    "skipped_blank",
    "skipped_unencodable",
    "skipped_item_limit",
    "skipped_total_item_limit",
    "skipped_over_budget",
    "skipped_window",
    "skipped_below_floor",
    "skipped_held",
    "skipped_below_cut",
    "truncated_source_cap",
    "truncated_budget",
    "content_bytes",
    "max_bytes",
    "latency_us",
    *(f"latency_le_{bound}ms" for bound in PREPARE_LATENCY_BOUNDS_MS),
    f"latency_over_{PREPARE_LATENCY_BOUNDS_MS[-1]}ms",
)
