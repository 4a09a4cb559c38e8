"""The feedback loop's admin: the feedback log, the counters and the decisions on reported items
are view-only for everyone, searchable by exact scope id or item key, filterable by outcome,
action, family and date, escape untrusted text, never show a token's secret, and cost the same
queries for few and many rows."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.contrib import admin
from django.db import connection
from django.db.models import Model
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from powercontext.feedback.models import Feedback, FeedbackCounter, ReportDecision
from review.services import reports
from tests.admin.test_admin import ESCAPED, PAYLOAD, RAW, row, url
from tests.review.factories import make_approved, make_reviewer
from tests.review.test_reported_views import agent, remember, report, target_of

pytestmark = pytest.mark.django_db

MODELS: list[type[Model]] = [Feedback, FeedbackCounter, ReportDecision]
IDS = [model.__name__ for model in MODELS]


@pytest.fixture(autouse=True)
def fast_password_hasher(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def populate(scope_id: str, reviewer: Any) -> dict[str, Any]:
    """Reports, uses and decisions of two items in ``scope_id``, with untrusted text."""
    first, _ = agent(f"agent-{scope_id}-a")
    second, _ = agent(f"agent-{scope_id}-b")
    memory = remember(f"The staging port is 6543 {PAYLOAD}", scope_id=scope_id)
    report(memory, "used", first, scope_id=scope_id)
    report(memory, "outdated", first, note=f"moved {PAYLOAD}", scope_id=scope_id)
    report(memory, "wrong", second, scope_id=scope_id)
    dismissal = reports.report_dismiss(
        scope_id=scope_id,
        target=target_of(memory),
        seen_through=Feedback.objects.filter(target=target_of(memory)).latest("pk").pk,
        reviewer=reviewer,
        reason=f"still true {PAYLOAD}",
    )
    reports.report_decision_undo(decision_id=dismissal.pk, reviewer=reviewer)
    _, ref = make_approved(scope_id, reviewer=reviewer)
    experience = {"artifact_ref": ref}
    report(experience, "wrong", first, scope_id=scope_id)
    reports.report_retire(scope_id=scope_id, target=target_of(experience), reviewer=reviewer, reason="wrong")
    return {"memory": memory, "experience": experience}


@pytest.fixture
def populated(db: None) -> dict[str, Any]:
    reviewer = make_reviewer()
    made = populate("repo", reviewer)
    populate("other", reviewer)
    return made


def one(model: type[Model]) -> Model:
    found = model.objects.filter(scope_id="repo").order_by("pk").first()
    assert found is not None
    return found


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_the_changelist_and_the_view_page_render_view_only(
    admin_client: Any, populated: dict[str, Any], model: type[Model]
) -> None:
    for obj in model.objects.all():
        page = admin_client.get(url(model, "change", obj.pk))
        assert page.status_code == 200
        assert b'name="_save"' not in page.content and page.context["has_change_permission"] is False
        assert page.context["adminform"].form.fields == {}
    listing = admin_client.get(url(model, "changelist"))
    assert listing.status_code == 200 and listing.context["cl"].result_count >= 2


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_nothing_can_be_added_changed_or_deleted(
    admin_client: Any, admin_user: Any, populated: dict[str, Any], model: type[Model]
) -> None:
    obj = one(model)
    before, count = row(obj), model.objects.count()
    assert admin_client.get(url(model, "add")).status_code == 403
    assert admin_client.post(url(model, "add"), {"scope_id": "forged"}).status_code == 403
    forged = {field: "forged" for field in before} | {"_save": "Save"}
    assert admin_client.post(url(model, "change", obj.pk), forged).status_code == 403
    assert admin_client.post(url(model, "delete", obj.pk), {"post": "yes"}).status_code == 403
    admin_client.post(
        url(model, "changelist"), {"action": "delete_selected", "_selected_action": [obj.pk], "post": "yes"}
    )
    assert row(obj) == before and model.objects.count() == count

    model_admin = admin.site._registry[model]
    request = RequestFactory().get("/admin/")
    request.user = admin_user
    assert model_admin.has_view_permission(request, obj) is True
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request, obj)
    assert not model_admin.has_delete_permission(request, obj)
    assert "delete_selected" not in model_admin.get_actions(request)


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_big_table_settings_are_in_place(model: type[Model]) -> None:
    model_admin = admin.site._registry[model]
    assert model_admin.show_full_result_count is False
    assert set(model_admin.raw_id_fields) == {f.name for f in model._meta.concrete_fields if f.is_relation}
    assert all(field.endswith("__exact") for field in model_admin.search_fields)


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_untrusted_text_is_escaped(admin_client: Any, populated: dict[str, Any], model: type[Model]) -> None:
    pages = [admin_client.get(url(model, "changelist"))]
    pages += [admin_client.get(url(model, "change", obj.pk)) for obj in model.objects.all()]
    for page in pages:
        assert page.status_code == 200 and RAW not in page.content
    if model is not FeedbackCounter:
        assert any(ESCAPED in page.content for page in pages)


def test_reporters_are_named_by_their_token_never_its_secret(admin_client: Any, db: None) -> None:
    token, secret = agent("ci-bot")
    citation = remember()
    report(citation, "wrong", token)
    feedback = Feedback.objects.get()
    for page in (
        admin_client.get(url(Feedback, "changelist")),
        admin_client.get(url(Feedback, "change", feedback.pk)),
    ):
        assert secret.encode() not in page.content
    assert f"ci-bot (token #{token.pk})".encode() in admin_client.get(url(Feedback, "changelist")).content


def test_a_page_links_to_the_item_in_the_review_inbox(admin_client: Any, populated: dict[str, Any]) -> None:
    counter = FeedbackCounter.objects.get(target=target_of(populated["memory"]))
    link = reverse("review:reported-item", args=[counter.pk]).encode()
    decision = ReportDecision.objects.filter(target=counter.target).first()
    assert decision is not None
    for model, pk in ((FeedbackCounter, counter.pk), (ReportDecision, decision.pk)):
        assert link in admin_client.get(url(model, "change", pk)).content


def results(admin_client: Any, model: type[Model], **params: Any) -> set[int]:
    response = admin_client.get(url(model, "changelist"), params)
    assert response.status_code == 200
    assert "e" not in response.wsgi_request.GET, "the admin rejected a lookup"
    return {obj.pk for obj in response.context["cl"].result_list}


def test_search_and_filters(admin_client: Any, populated: dict[str, Any]) -> None:
    target = target_of(populated["memory"])
    assert results(admin_client, Feedback, q="repo") == set(
        Feedback.objects.filter(scope_id="repo").values_list("pk", flat=True)
    )
    assert results(admin_client, Feedback, q=target) == set(
        Feedback.objects.filter(target=target).values_list("pk", flat=True)
    )
    assert results(admin_client, Feedback, q="rep") == set()
    assert results(admin_client, Feedback, outcome__exact="wrong") == set(
        Feedback.objects.filter(outcome="wrong").values_list("pk", flat=True)
    )
    assert results(admin_client, Feedback, family__exact="experience") == set(
        Feedback.objects.filter(family="experience").values_list("pk", flat=True)
    )
    # The date filter's "Today" link.
    today = str(datetime.now(tz=UTC).replace(hour=0, minute=0, second=0, microsecond=0))
    assert len(results(admin_client, Feedback, created_at__gte=today)) == Feedback.objects.count()
    assert results(admin_client, FeedbackCounter, open="yes") == set(
        FeedbackCounter.objects.filter(reporters__gt=0).values_list("pk", flat=True)
    )
    assert results(admin_client, FeedbackCounter, open="no") == set(
        FeedbackCounter.objects.filter(reporters=0).values_list("pk", flat=True)
    )
    for action in ("dismissed", "undone", "retired"):
        assert results(admin_client, ReportDecision, action__exact=action) == set(
            ReportDecision.objects.filter(action=action).values_list("pk", flat=True)
        )
    assert results(admin_client, ReportDecision, family__exact="memory", q="other") == set(
        ReportDecision.objects.filter(family="memory", scope_id="other").values_list("pk", flat=True)
    )


def test_changelists_cost_the_same_queries_for_few_and_many_rows(admin_client: Any, settings: Any) -> None:
    settings.POWERCONTEXT_FEEDBACK_RATE_PER_MINUTE = 0
    reviewer = make_reviewer()

    def grow(start: int, n: int) -> None:
        for i in range(start, start + n):
            populate(f"scope-{i}", reviewer)

    def counts() -> dict[str, int]:
        found = {}
        for model in MODELS:
            with CaptureQueriesContext(connection) as queries:
                assert admin_client.get(url(model, "changelist")).status_code == 200
            found[model.__name__] = len(queries)
        return found

    grow(0, 2)
    admin_client.get(url(Feedback, "changelist"))  # warm the session and content-type caches
    few = counts()
    grow(2, 20)
    assert Feedback.objects.count() >= 80
    assert counts() == few
