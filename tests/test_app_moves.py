"""Models moved out of the ``powercontext`` app (the pipeline's tables to ``pipeline``, the prepare
aggregates to ``prepare``) without data loss: rows written before the move are read by the moved
models, and permissions granted on the old models follow them (their content types are
relabelled, not recreated)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from powercontext.pipeline.models import PipelineCounter
from powercontext.prepare.models import PrepareAggregate

BEFORE = [("powercontext", "0014_experience_vector"), ("pipeline", None), ("prepare", None)]
NOON = datetime(2026, 1, 2, 12, tzinfo=UTC)


def _migrate(targets: list[tuple[str, str | None]]) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return executor


def _grant_on_old_model(model: str) -> Permission:
    ContentType.objects.filter(model=model).delete()
    old_type = ContentType.objects.create(app_label="powercontext", model=model)
    return Permission.objects.create(content_type=old_type, codename=f"before_move_{model}", name="x")


@pytest.mark.django_db(transaction=True)
def test_rows_and_permissions_written_before_the_moves_survive_them() -> None:
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    old_apps = _migrate(BEFORE).loader.project_state(BEFORE[:1]).apps
    counter = old_apps.get_model("powercontext", "PipelineCounter")
    counter.objects.create(scope_id="s", name="phase1_succeeded", value=7, updated_at=NOON)
    aggregate = old_apps.get_model("powercontext", "PrepareAggregate")
    aggregate.objects.create(scope_id="s", hour=NOON, search_mode="fts", prepares=3, updated_at=NOON)
    granted = [_grant_on_old_model("pipelinecounter"), _grant_on_old_model("prepareaggregate")]

    _migrate(latest)

    assert PipelineCounter.objects.get(scope_id="s", name="phase1_succeeded").value == 7
    assert PrepareAggregate.objects.get(scope_id="s", hour=NOON).prepares == 3
    labels = set()
    for permission in granted:
        permission.refresh_from_db()
        labels.add((permission.content_type.app_label, permission.content_type.model))
    assert labels == {("pipeline", "pipelinecounter"), ("prepare", "prepareaggregate")}
    assert not ContentType.objects.filter(
        app_label="powercontext", model__in=["pipelinecounter", "prepareaggregate"]
    ).exists()
