"""The pipeline's tables moved from the ``powercontext`` app to the ``pipeline`` app without data
loss: rows written before the move are read by the moved models, and permissions granted on the
old models follow them (their content types are relabelled, not recreated)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from powercontext.pipeline.models import PipelineCounter

BEFORE = [("powercontext", "0014_experience_vector"), ("pipeline", None)]


def _migrate(targets: list[tuple[str, str | None]]) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor


def _latest() -> list[tuple[str, str | None]]:
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()


@pytest.mark.django_db(transaction=True)
def test_rows_and_permissions_written_before_the_move_survive_it() -> None:
    latest = _latest()
    executor = _migrate(BEFORE)
    old_apps = executor.loader.project_state(BEFORE[:1]).apps
    old_counter = old_apps.get_model("powercontext", "PipelineCounter")
    assert old_counter._meta.db_table == "powercontext_pipelinecounter"
    old_counter.objects.create(scope_id="s", name="phase1_succeeded", value=7, updated_at=timezone.now())
    ContentType.objects.filter(app_label="pipeline").delete()
    old_type, _ = ContentType.objects.get_or_create(app_label="powercontext", model="pipelinecounter")
    granted = Permission.objects.create(
        content_type=old_type, codename="view_pipelinecounter_before_move", name="granted before the move"
    )

    _migrate(latest)

    moved = PipelineCounter.objects.get(scope_id="s", name="phase1_succeeded")
    assert moved.value == 7
    granted.refresh_from_db()
    assert (granted.content_type.app_label, granted.content_type.model) == ("pipeline", "pipelinecounter")
    assert not ContentType.objects.filter(app_label="powercontext", model__startswith="pipeline").exists()
