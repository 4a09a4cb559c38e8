"""The pipeline's tunables as one frozen value, read from settings once per call site."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from django.conf import settings


@dataclass(frozen=True)
class PipelineConfig:
    idle: timedelta
    max_age: timedelta
    lease: timedelta
    backoff: timedelta
    run_cap: int
    running_cap: int
    projection_bytes: int
    cooldown: timedelta
    selection_cap: int
    retention: timedelta
    polluted_origins: tuple[str, ...]
    excluded_scopes: tuple[str, ...]
    retry_budget: int = 3

    def with_changes(self, **changes: Any) -> PipelineConfig:
        return replace(self, **changes)


def pipeline_config() -> PipelineConfig:
    raw: dict[str, Any] = settings.POWERCONTEXT_PIPELINE
    return PipelineConfig(
        idle=timedelta(seconds=raw["idle_seconds"]),
        max_age=timedelta(days=raw["max_age_days"]),
        lease=timedelta(seconds=raw["lease_seconds"]),
        backoff=timedelta(seconds=raw["backoff_seconds"]),
        run_cap=raw["run_cap"],
        running_cap=raw["running_cap"],
        projection_bytes=raw["projection_bytes"],
        cooldown=timedelta(seconds=raw["cooldown_seconds"]),
        selection_cap=raw["selection_cap"],
        retention=timedelta(days=raw["retention_days"]),
        polluted_origins=tuple(raw["polluted_origins"]),
        excluded_scopes=tuple(raw["excluded_scopes"]),
    )
