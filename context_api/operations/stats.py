"""``get_stats``: privacy-safe aggregate counts for one scope (``GET /v1/stats``)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from context_api.operations.base import Caller, Operation, operation
from context_api.validation import StrictChoiceField, StrictSerializer, scope_field
from review.selectors import stats

STATS_PERIODS = tuple(stats.PERIOD_DAYS)
DEFAULT_PERIOD = "today"  # the contract declares no default


class StatsInput(StrictSerializer):
    scope_id = scope_field()
    period = StrictChoiceField(choices=STATS_PERIODS, required=False, default=DEFAULT_PERIOD)


def _zero_usage() -> dict[str, Any]:
    return {"requests": 0, "input_tokens": None, "output_tokens": None}


def _zero_recall() -> dict[str, int]:
    return {
        "preparations": 0,
        "ready_preparations": 0,
        "comparable_preparations": 0,
        "baseline_tokens": 0,
        "recalled_tokens": 0,
        "token_reduction": 0,
    }


@operation(
    "get_stats",
    "v1/stats",
    StatsInput,
    method="GET",
    read_only=True,
    idempotent=True,
    headers=(("Cache-Control", "no-store"),),
)
def get_stats(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Scope statistics: inventory counts; no model usage or recall is recorded (zeros)."""
    now = timezone.now()
    start, end = stats.period_bounds(preset=data["period"], today=now.date())
    period = {
        "preset": data["period"],
        "start_date": start.isoformat(),
        "end_date": end.isoformat(),
        "timezone": "UTC",
    }
    counts = stats.scope_stats(scope_id=data["scope_id"])
    candidates = counts.candidates_by_family
    kinds = counts.memory_by_kind
    return {
        "scope_id": data["scope_id"],
        "as_of": now.isoformat().replace("+00:00", "Z"),
        "inventory": {
            "sources": {"total": counts.sources, "memory_processed": 0, "memory_pending": 0},
            "artifacts": {
                "total": sum(counts.artifacts_by_family.values()),
                "by_family": [{"family": f, "total": n} for f, n in counts.artifacts_by_family.items()],
            },
            "candidates": {
                "total": sum(c.pending + c.approved + c.rejected for c in candidates),
                "pending": sum(c.pending for c in candidates),
                "approved": sum(c.approved for c in candidates),
                "rejected": sum(c.rejected for c in candidates),
                "by_family": [
                    {
                        "family": c.family,
                        "total": c.pending + c.approved + c.rejected,
                        "pending": c.pending,
                        "approved": c.approved,
                        "rejected": c.rejected,
                    }
                    for c in candidates
                ],
            },
            "memory": {
                "entries": {
                    "total": sum(k.active + k.inactive for k in kinds),
                    "active": sum(k.active for k in kinds),
                    "inactive": sum(k.inactive for k in kinds),
                    "by_kind": [
                        {
                            "kind": k.kind,
                            "total": k.active + k.inactive,
                            "active": k.active,
                            "inactive": k.inactive,
                        }
                        for k in kinds
                    ],
                }
            },
        },
        "usage": {
            "period": period,
            "totals": {"generation": _zero_usage(), "embedding": _zero_usage()},
            "by_purpose": [],
            "daily": [],
        },
        "recall": {"period": dict(period), "estimator": None, "totals": _zero_recall(), "daily": []},
    }


OPERATIONS: tuple[Operation, ...] = (get_stats,)
