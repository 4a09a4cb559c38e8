"""The audit admin: every model is view-only (superusers included), searchable by exact ids,
filterable without extra queries, constant-query changelists, and untrusted text escaped."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib import admin
from django.db import connection
from django.db.models import Model
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from context_api.auth import authenticate
from powercontext.core.exceptions import Unauthorized
from powercontext.core.models import (
    ApiToken,
    Artifact,
    ArtifactRevision,
    ExperienceSearchDocument,
    MemoryEntry,
    MemoryEntryVersion,
    MemoryMembership,
    MemorySearchDocument,
    ScopeState,
    Source,
)
from powercontext.core.tokens import api_token_revoke, token_digest
from powercontext.memory import services as memory_services
from powercontext.memory.sources import source_capture
from review import services as review_services
from review.models import Candidate, CandidateClaim, CandidateVersion, ReviewDecision
from tests.powercontext.factories import citation_of, make_memory
from tests.review.factories import (
    create_token,
    experience_proposal,
    make_approved,
    make_candidate,
    make_reviewer,
    make_source,
    skill_proposal,
    submission,
)

PAYLOAD = '<script>alert("pc")</script>'
RAW = b"<script>alert("
ESCAPED = b"&lt;script&gt;alert("

VIEW_ONLY_MODELS: list[type[Model]] = [
    ScopeState,
    Source,
    Artifact,
    ArtifactRevision,
    MemoryEntry,
    MemoryEntryVersion,
    MemoryMembership,
    MemorySearchDocument,
    ExperienceSearchDocument,
    ApiToken,
    Candidate,
    CandidateVersion,
    ReviewDecision,
    CandidateClaim,
]
IDS = [model.__name__ for model in VIEW_ONLY_MODELS]


@pytest.fixture(autouse=True)
def fast_password_hasher(settings: Any) -> None:
    """pytest-django's ``admin_user`` hashes a real password; keep that cheap."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def url(model: type[Model], view: str, *args: Any) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def row(obj: Model) -> dict[str, Any]:
    """Every stored column of a row, as the database holds it now."""
    return type(obj).objects.filter(pk=obj.pk).values().get()


def populate(scope_id: str) -> None:
    """One of everything in ``scope_id``, written through the services, with untrusted text."""
    make_memory(scope_id, f"deploy notes {PAYLOAD}")
    retired = make_memory(scope_id, "a note that was retired later")
    memory_services.memory_retire(scope_id=scope_id, citation=citation_of(retired))
    source_capture(
        scope_id=scope_id, source_id=f"src {PAYLOAD}", content=f"prompt {PAYLOAD}", metadata={"note": PAYLOAD}
    )
    reviewer = make_reviewer()
    make_approved(
        scope_id,
        "experience",
        proposal=experience_proposal(situation=f"the cache {PAYLOAD}"),
        reason=PAYLOAD,
        reviewer=reviewer,
    )
    make_approved(scope_id, "skill", proposal=skill_proposal(), reviewer=reviewer)
    rejected = make_candidate(scope_id, "skill")
    review_services.candidate_reject(
        scope_id=scope_id,
        candidate_id=rejected.candidate_id,
        expected_version=1,
        reason=f"no {PAYLOAD}",
        reviewer=reviewer,
    )
    pending = make_candidate(scope_id, "experience")
    review_services.candidate_revise(
        scope_id=scope_id,
        candidate_id=pending.candidate_id,
        expected_version=1,
        submission=submission(scope_id=scope_id, reason=f"revised {PAYLOAD}"),
        reviewer=reviewer,
    )
    review_services.candidate_claim(
        scope_id=scope_id, candidate_id=pending.candidate_id, reviewer=reviewer, expected_claimant=None
    )
    create_token(f"user-{scope_id}")


@pytest.fixture
def populated(db: None) -> None:
    populate("repo")
    populate("other")


def one(model: type[Model]) -> Model:
    found = model.objects.order_by("pk").first()
    assert found is not None, f"no {model.__name__} row"
    return found


def superuser_request(admin_user: Any) -> Any:
    request = RequestFactory().get("/admin/")
    request.user = admin_user
    return request


# --- view-only, for every model ----------------------------------------------------------------------


@pytest.mark.parametrize("model", VIEW_ONLY_MODELS, ids=IDS)
def test_the_changelist_and_the_view_page_render(
    admin_client: Any, populated: None, model: type[Model]
) -> None:
    obj = one(model)

    listing = admin_client.get(url(model, "changelist"))
    page = admin_client.get(url(model, "change", obj.pk))

    assert listing.status_code == 200
    assert listing.context["cl"].result_count >= 1
    assert page.status_code == 200
    assert b'name="_save"' not in page.content and b'name="_continue"' not in page.content
    assert page.context["has_change_permission"] is False
    assert page.context["adminform"].form.fields == {}


@pytest.mark.parametrize("model", VIEW_ONLY_MODELS, ids=IDS)
def test_the_add_page_is_forbidden(admin_client: Any, populated: None, model: type[Model]) -> None:
    before = model.objects.count()
    assert admin_client.get(url(model, "add")).status_code == 403
    assert admin_client.post(url(model, "add"), {"scope_id": "forged"}).status_code == 403
    assert model.objects.count() == before


@pytest.mark.parametrize("model", VIEW_ONLY_MODELS, ids=IDS)
def test_a_post_to_the_change_page_modifies_nothing(
    admin_client: Any, populated: None, model: type[Model]
) -> None:
    obj = one(model)
    before = row(obj)
    forged = {field: "forged" for field in before} | {"_save": "Save"}

    response = admin_client.post(url(model, "change", obj.pk), forged)

    assert response.status_code == 403
    assert row(obj) == before


@pytest.mark.parametrize("model", VIEW_ONLY_MODELS, ids=IDS)
def test_delete_is_forbidden(admin_client: Any, populated: None, model: type[Model]) -> None:
    obj = one(model)
    count = model.objects.count()

    assert admin_client.get(url(model, "delete", obj.pk)).status_code == 403
    assert admin_client.post(url(model, "delete", obj.pk), {"post": "yes"}).status_code == 403
    bulk = admin_client.post(
        url(model, "changelist"), {"action": "delete_selected", "_selected_action": [obj.pk], "post": "yes"}
    )

    assert bulk.status_code in (200, 302)
    assert model.objects.count() == count and model.objects.filter(pk=obj.pk).exists()


@pytest.mark.parametrize("model", VIEW_ONLY_MODELS, ids=IDS)
def test_no_one_has_add_change_or_delete_permission(
    admin_user: Any, populated: None, model: type[Model]
) -> None:
    model_admin = admin.site._registry[model]
    request = superuser_request(admin_user)
    obj = one(model)

    assert model_admin.has_view_permission(request, obj) is True
    assert model_admin.has_add_permission(request) is False
    assert model_admin.has_change_permission(request) is False
    assert model_admin.has_change_permission(request, obj) is False
    assert model_admin.has_delete_permission(request) is False
    assert model_admin.has_delete_permission(request, obj) is False
    assert "delete_selected" not in model_admin.get_actions(request)


@pytest.mark.parametrize("model", VIEW_ONLY_MODELS, ids=IDS)
def test_big_table_settings_are_in_place(model: type[Model]) -> None:
    model_admin = admin.site._registry[model]
    assert model_admin.show_full_result_count is False
    assert 10 <= model_admin.list_per_page <= 100
    assert model_admin.search_fields
    relations = {f.name for f in model._meta.concrete_fields if f.is_relation}
    assert set(model_admin.raw_id_fields) == relations
    assert model_admin.list_select_related is not False
    for field in model_admin.search_fields:
        assert field.endswith("__exact"), field


# --- search and filters ------------------------------------------------------------------------------------

SCOPE_OF: dict[type[Model], Callable[[Any], str]] = {
    ScopeState: lambda o: o.scope_id,
    Source: lambda o: o.scope_id,
    Artifact: lambda o: o.scope_id,
    ArtifactRevision: lambda o: o.scope_id,
    MemoryEntry: lambda o: o.scope_id,
    MemoryEntryVersion: lambda o: o.scope_id,
    MemoryMembership: lambda o: o.scope_id,
    MemorySearchDocument: lambda o: o.scope_id,
    ExperienceSearchDocument: lambda o: o.scope_id,
    Candidate: lambda o: o.scope_id,
    CandidateVersion: lambda o: o.candidate.scope_id,
    ReviewDecision: lambda o: o.candidate.scope_id,
    CandidateClaim: lambda o: o.candidate.scope_id,
}


# Searched by review.admin_search (prefixes, usernames, words): tests/admin/test_audit_search.py.
PREFIX_SEARCHED = {Candidate, ReviewDecision, ArtifactRevision}


def results(admin_client: Any, model: type[Model], **params: Any) -> list[Any]:
    response = admin_client.get(url(model, "changelist"), params)
    assert response.status_code == 200
    assert "e" not in response.wsgi_request.GET, "the admin rejected a lookup"
    return list(response.context["cl"].result_list)


@pytest.mark.parametrize("model", list(SCOPE_OF), ids=[m.__name__ for m in SCOPE_OF])
def test_search_by_exact_scope_id(admin_client: Any, populated: None, model: type[Model]) -> None:
    scope_of = SCOPE_OF[model]
    expected = {o.pk for o in model.objects.all() if scope_of(o) == "repo"}
    assert expected

    found = results(admin_client, model, q="repo")

    assert {o.pk for o in found} == expected
    if model in PREFIX_SEARCHED:  # the review audit: a case-insensitive scope prefix (issue 22)
        assert {o.pk for o in results(admin_client, model, q="scope:Rep")} == expected
        return
    assert results(admin_client, model, q="Repo") == []  # scope ids are case-sensitive
    assert results(admin_client, model, q="rep") == []  # and matched exactly


def test_search_by_ids(admin_client: Any, populated: None) -> None:
    candidate = Candidate.objects.filter(scope_id="repo", status="approved").first()
    assert candidate is not None and candidate.result_head is not None
    entry = MemoryEntry.objects.filter(scope_id="repo").first()
    assert entry is not None

    assert [c.pk for c in results(admin_client, Candidate, q=candidate.candidate_id)] == [candidate.pk]
    assert {v.candidate_id for v in results(admin_client, CandidateVersion, q=candidate.candidate_id)} == {
        candidate.pk
    }
    assert [d.candidate_id for d in results(admin_client, ReviewDecision, q=candidate.candidate_id)] == [
        candidate.pk
    ]
    artifact_id = candidate.result_head.artifact_id
    assert [a.pk for a in results(admin_client, Artifact, q=artifact_id)] == [candidate.result_head_id]
    assert {r.artifact_id for r in results(admin_client, ArtifactRevision, q=artifact_id)} == {artifact_id}
    assert [d.pk for d in results(admin_client, ExperienceSearchDocument, q=artifact_id)] == [
        candidate.result_head_id
    ]
    assert [e.pk for e in results(admin_client, MemoryEntry, q=entry.entry_id)] == [entry.pk]
    assert {v.entry_id for v in results(admin_client, MemoryEntryVersion, q=entry.entry_id)} == {entry.pk}
    assert {m.entry_id for m in results(admin_client, MemoryMembership, q=entry.entry_id)} == {entry.pk}
    token = ApiToken.objects.get(user__username="user-repo")
    assert [t.pk for t in results(admin_client, ApiToken, q=token.prefix)] == [token.pk]
    assert [t.pk for t in results(admin_client, ApiToken, q="user-repo")] == [token.pk]


FILTERS: list[tuple[type[Model], dict[str, str], dict[str, Any]]] = [
    (Candidate, {"status__exact": "approved"}, {"status": "approved"}),
    (
        Candidate,
        {"status__exact": "pending", "family__exact": "experience"},
        {"status": "pending", "family": "experience"},
    ),
    (Candidate, {"family__exact": "skill"}, {"family": "skill"}),
    (CandidateVersion, {"candidate__family__exact": "skill"}, {"candidate__family": "skill"}),
    (ReviewDecision, {"decision__exact": "rejected"}, {"decision": "rejected"}),
    (Artifact, {"family": "experience"}, {"family": "experience"}),
    (Artifact, {"family": "memory", "state__exact": "active"}, {"family": "memory", "state": "active"}),
    (ArtifactRevision, {"family": "skill"}, {"family": "skill"}),
    (MemoryMembership, {"state__exact": "inactive"}, {"state": "inactive"}),
    (ApiToken, {"revoked": "no"}, {"revoked_at__isnull": True}),
]


@pytest.mark.parametrize(
    ("model", "params", "expected"), FILTERS, ids=[f"{m.__name__}-{p}" for m, p, _ in FILTERS]
)
def test_filters(
    admin_client: Any, populated: None, model: type[Model], params: dict[str, str], expected: dict[str, Any]
) -> None:
    api_token_revoke(
        token_ids=ApiToken.objects.filter(user__username="user-other").values_list("pk", flat=True)
    )
    wanted = set(model.objects.filter(**expected).values_list("pk", flat=True))
    assert wanted and wanted != set(model.objects.values_list("pk", flat=True)), (
        "the filter must select a strict subset"
    )

    assert {o.pk for o in results(admin_client, model, **params)} == wanted


def test_the_revoked_filter_finds_revoked_tokens(admin_client: Any, populated: None) -> None:
    token = ApiToken.objects.get(user__username="user-repo")
    api_token_revoke(token_ids=[token.pk])
    assert [t.pk for t in results(admin_client, ApiToken, revoked="yes")] == [token.pk]
    assert token.pk not in {t.pk for t in results(admin_client, ApiToken, revoked="no")}


def test_filters_and_search_combine(admin_client: Any, populated: None) -> None:
    found = results(admin_client, Candidate, q="other", status__exact="rejected")
    assert [(c.scope_id, c.status) for c in found] == [("other", "rejected")]


# --- query counts ---------------------------------------------------------------------------------------------


def grow(n: int, start: int) -> None:
    """``n`` more rows of every model (Sources and ScopeStates in fresh scopes)."""
    reviewer = make_reviewer()
    source = make_source("grow")
    for i in range(start, start + n):
        make_memory("grow", f"growing note {i}")
        make_source(f"grow-{i}")
        candidate = make_candidate("grow", "experience", source_refs=[source])
        review_services.candidate_approve(
            scope_id="grow", candidate_id=candidate.candidate_id, expected_version=1, reviewer=reviewer
        )
        claimed = make_candidate("grow", "experience", source_refs=[source])
        review_services.candidate_claim(
            scope_id="grow", candidate_id=claimed.candidate_id, reviewer=reviewer, expected_claimant=None
        )
        create_token(f"grower-{i}")


def changelist_queries(admin_client: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for model in VIEW_ONLY_MODELS:
        with CaptureQueriesContext(connection) as queries:
            response = admin_client.get(url(model, "changelist"))
        assert response.status_code == 200
        counts[model.__name__] = len(queries)
    return counts


def test_changelist_queries_do_not_grow_with_rows(
    admin_client: Any, django_assert_max_num_queries: Any
) -> None:
    grow(10, 0)
    admin_client.get(url(Candidate, "changelist"))  # warm the session and content-type caches
    at_10 = changelist_queries(admin_client)
    grow(90, 10)
    assert Candidate.objects.count() >= 100 and MemoryEntryVersion.objects.count() >= 100

    at_100 = changelist_queries(admin_client)

    assert at_100 == at_10
    for model in VIEW_ONLY_MODELS:
        # The decisions' audit trail adds its reviewer filter (one users query) and the
        # decided_at date hierarchy (min/max and the distinct dates): a constant three more.
        with django_assert_max_num_queries(7 if model is ReviewDecision else 6):
            admin_client.get(url(model, "changelist"))


def test_filtered_and_searched_changelists_keep_a_constant_query_count(admin_client: Any) -> None:
    grow(10, 0)

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            response = admin_client.get(
                url(CandidateVersion, "changelist"), {"q": "grow", "candidate__family__exact": "experience"}
            )
        assert response.status_code == 200
        return len(queries)

    before = count()
    grow(40, 10)
    assert count() == before


# --- escaping, labels, tokens --------------------------------------------------------------------------------


@pytest.mark.parametrize("model", VIEW_ONLY_MODELS, ids=IDS)
def test_untrusted_text_renders_escaped(admin_client: Any, populated: None, model: type[Model]) -> None:
    pages = [admin_client.get(url(model, "changelist"))]
    pages += [admin_client.get(url(model, "change", obj.pk)) for obj in model.objects.all()]

    for page in pages:
        assert page.status_code == 200
        assert RAW not in page.content, page.request["PATH_INFO"]


SHOWN_ESCAPED: list[tuple[type[Model], Callable[[], Model]]] = [
    (Source, lambda: Source.objects.get(scope_id="repo", content__contains="<script>")),
    (
        MemoryEntryVersion,
        lambda: MemoryEntryVersion.objects.filter(scope_id="repo", text__contains="<script>").get(),
    ),
    (ArtifactRevision, lambda: ArtifactRevision.objects.filter(scope_id="repo", family="experience").get()),
    (Artifact, lambda: Artifact.objects.filter(scope_id="repo", family="experience").get()),
    (
        CandidateVersion,
        lambda: CandidateVersion.objects.filter(
            candidate__scope_id="repo", reason__contains="<script>"
        ).first(),
    ),
    (Candidate, lambda: Candidate.objects.get(scope_id="repo", status="rejected")),
    (ReviewDecision, lambda: ReviewDecision.objects.get(candidate__scope_id="repo", decision="rejected")),
]


@pytest.mark.parametrize(("model", "pick"), SHOWN_ESCAPED, ids=[m.__name__ for m, _ in SHOWN_ESCAPED])
def test_untrusted_text_is_shown_as_text(
    admin_client: Any, populated: None, model: type[Model], pick: Callable[[], Model]
) -> None:
    page = admin_client.get(url(model, "change", pick().pk))
    assert page.status_code == 200
    assert RAW not in page.content
    assert ESCAPED in page.content or model is Artifact


def test_json_fields_are_pretty_printed(admin_client: Any, populated: None) -> None:
    revision = ArtifactRevision.objects.filter(scope_id="repo", family="experience").get()
    page = admin_client.get(url(ArtifactRevision, "change", revision.pk)).content.decode()
    assert '<pre style="white-space: pre-wrap; margin: 0">{\n  &quot;' in page
    assert "&quot;situation&quot;: &quot;the cache &lt;script&gt;alert(" in page


def test_the_changelist_escapes_untrusted_excerpts(admin_client: Any, populated: None) -> None:
    content = admin_client.get(url(MemoryEntryVersion, "changelist")).content
    assert ESCAPED in content and RAW not in content
    content = admin_client.get(url(Source, "changelist")).content
    assert b"src &lt;script&gt;alert(" in content and RAW not in content


def test_artifacts_are_labelled_as_heads(admin_client: Any, populated: None) -> None:
    index = admin_client.get(reverse("admin:index")).content.decode()
    assert "Artifact heads" in index
    listing = admin_client.get(url(Artifact, "changelist")).content.decode()
    assert "Select artifact head to view" in listing
    head = Artifact.objects.filter(family="experience").first()
    assert head is not None
    page = admin_client.get(url(Artifact, "change", head.pk)).content.decode()
    assert "View artifact head" in page
    assert f"?head__id__exact={head.pk}" in page


def test_the_revisions_link_of_a_head_lists_only_its_revisions(admin_client: Any, populated: None) -> None:
    head = Artifact.objects.get(scope_id="repo", family="memory")
    found = results(admin_client, ArtifactRevision, head__id__exact=head.pk)
    assert {r.pk for r in found} == set(
        ArtifactRevision.objects.filter(head=head).values_list("pk", flat=True)
    )
    assert len(found) == head.current_revision


def test_the_token_admin_never_shows_the_digest(admin_client: Any, populated: None) -> None:
    token = ApiToken.objects.get(user__username="user-repo")
    listing = admin_client.get(url(ApiToken, "changelist")).content.decode()
    page = admin_client.get(url(ApiToken, "change", token.pk)).content.decode()
    for content in (listing, page):
        assert token.digest not in content
        assert token.prefix in content
    assert "digest" not in page.lower()


def test_the_revoke_action_revokes_the_selected_tokens(admin_client: Any, db: None) -> None:
    kept, _ = create_token("keeper")
    revoked, _ = create_token("leaver")
    target = ApiToken.objects.get(digest=token_digest(revoked))

    response = admin_client.post(
        url(ApiToken, "changelist"), {"action": "revoke_tokens", "_selected_action": [target.pk], "index": 0}
    )

    assert response.status_code == 302
    target.refresh_from_db()
    assert target.revoked_at is not None
    assert ApiToken.objects.get(digest=token_digest(kept)).revoked_at is None
    assert authenticate(_bearer(kept)) is not None
    with pytest.raises(Unauthorized):
        authenticate(_bearer(revoked))


def test_revoking_again_keeps_the_first_revocation_time(db: None) -> None:
    from datetime import UTC, datetime

    token, _ = create_token("twice")
    pk = ApiToken.objects.get(digest=token_digest(token)).pk
    first = datetime(2030, 1, 1, tzinfo=UTC)

    assert api_token_revoke(token_ids=[pk], now=first) == 1
    assert api_token_revoke(token_ids=[pk], now=datetime(2031, 1, 1, tzinfo=UTC)) == 0
    assert ApiToken.objects.get(pk=pk).revoked_at == first


def test_a_staff_user_who_may_only_view_tokens_cannot_revoke(
    client: Any, django_user_model: Any, db: None
) -> None:
    from django.contrib.auth.models import Permission

    viewer = django_user_model.objects.create_user(username="viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_apitoken"))
    client.force_login(viewer)
    token, _ = create_token("someone")
    target = ApiToken.objects.get(digest=token_digest(token))

    listing = client.get(url(ApiToken, "changelist"))
    client.post(
        url(ApiToken, "changelist"), {"action": "revoke_tokens", "_selected_action": [target.pk], "index": 0}
    )

    assert listing.status_code == 200
    assert b"revoke_tokens" not in listing.content
    target.refresh_from_db()
    assert target.revoked_at is None


def test_a_user_without_view_permission_sees_nothing(
    client: Any, django_user_model: Any, populated: None
) -> None:
    outsider = django_user_model.objects.create_user(username="outsider", password="pw", is_staff=True)
    client.force_login(outsider)
    for model in VIEW_ONLY_MODELS:
        assert client.get(url(model, "changelist")).status_code == 403


def _bearer(token: str) -> Any:
    request = RequestFactory().get("/", HTTP_AUTHORIZATION=f"Bearer {token}")
    return request
