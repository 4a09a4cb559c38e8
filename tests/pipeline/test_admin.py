"""The pipeline's admin pages are view-only and show ids, states, codes and counters."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib import admin
from django.db.models import Model
from django.test import RequestFactory
from django.urls import reverse

from powercontext.pipeline.models import (
    PipelineCounter,
    PipelineJob,
    PipelineOutput,
    PipelineScopeJob,
    PipelineSelection,
)
from tests.pipeline.helpers import AWS_KEY, capture, run_pass

MODELS: list[type[Model]] = [
    PipelineJob,
    PipelineOutput,
    PipelineScopeJob,
    PipelineSelection,
    PipelineCounter,
]


@pytest.fixture(autouse=True)
def fast_password_hasher(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def url(model: type[Model], view: str, *args: Any) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


@pytest.mark.django_db
@pytest.mark.parametrize("model", MODELS, ids=[m.__name__ for m in MODELS])
def test_every_pipeline_table_is_view_only(admin_client: Any, admin_user: Any, model: type[Model]) -> None:
    capture("adm", "a", f"remember: the key is {AWS_KEY}")
    run_pass("adm")
    obj = model.objects.order_by("pk").first()
    assert obj is not None

    listing = admin_client.get(url(model, "changelist"))
    page = admin_client.get(url(model, "change", obj.pk))

    assert listing.status_code == 200 and page.status_code == 200
    assert AWS_KEY.encode() not in listing.content + page.content
    assert admin_client.get(url(model, "add")).status_code == 403
    assert admin_client.post(url(model, "delete", obj.pk), {"post": "yes"}).status_code == 403
    model_admin = admin.site._registry[model]
    request = RequestFactory().get("/admin/")
    request.user = admin_user
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request, obj)
    assert not model_admin.has_delete_permission(request, obj)
    assert model_admin.show_full_result_count is False


@pytest.mark.django_db
def test_the_counters_page_shows_outcome_counts(admin_client: Any) -> None:
    capture("adm", "a", "remember: one")
    run_pass("adm")

    content = admin_client.get(url(PipelineCounter, "changelist")).content.decode()

    assert "claimed" in content and "output" in content
