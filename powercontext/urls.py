"""URL routes. /v1 is the public API (context_api); /review is the Review Inbox; /admin audits."""

from django.contrib import admin
from django.urls import include, path

from context_api import apis, review_apis

# Browser routes get HTML error pages, everything else the JSON envelope (context_api.errors).
handler400 = "context_api.errors.bad_request"
handler403 = "context_api.errors.permission_denied"
handler404 = "context_api.errors.not_found"
handler500 = "context_api.errors.server_error"

urlpatterns = [
    path("health/live", apis.LivenessApi.as_view(), name="get_liveness"),
    path("health/ready", apis.ReadinessApi.as_view(), name="get_readiness"),
    path("v1/capabilities", apis.CapabilitiesApi.as_view(), name="get_capabilities"),
    path("v1/context/prepare", apis.PrepareContextApi.as_view(), name="prepare_context"),
    path("v1/sources/content", apis.CaptureContentSourceApi.as_view(), name="capture_content_source"),
    path("v1/memory/remember", apis.RememberMemoryApi.as_view(), name="remember_memory"),
    path("v1/memory/search", apis.SearchMemoryApi.as_view(), name="search_memory"),
    path("v1/memory/entries/list", apis.ListMemoryEntriesApi.as_view(), name="list_memory_entries"),
    path("v1/memory/entries/get", apis.GetMemoryEntryApi.as_view(), name="get_memory_entry"),
    path("v1/memory/entries/revise", apis.ReviseMemoryEntryApi.as_view(), name="revise_memory_entry"),
    path("v1/memory/entries/retire", apis.RetireMemoryEntryApi.as_view(), name="retire_memory_entry"),
    path("v1/memory/changes", apis.ListMemoryChangesApi.as_view(), name="list_memory_changes"),
    path("v1/experience/propose", review_apis.ProposeExperienceApi.as_view(), name="propose_experience"),
    path("v1/experience/get", review_apis.GetExperienceApi.as_view(), name="get_experience"),
    path("v1/skill/propose", review_apis.ProposeSkillApi.as_view(), name="propose_skill"),
    path("v1/skill/get", review_apis.GetSkillApi.as_view(), name="get_skill"),
    path(
        "v1/artifact-candidates/list",
        review_apis.ListArtifactCandidatesApi.as_view(),
        name="list_artifact_candidates",
    ),
    path(
        "v1/artifact-candidates/get",
        review_apis.GetArtifactCandidateApi.as_view(),
        name="get_artifact_candidate",
    ),
    path(
        "v1/artifact-candidates/approve",
        review_apis.ApproveArtifactCandidateApi.as_view(),
        name="approve_artifact_candidate",
    ),
    path(
        "v1/artifact-candidates/reject",
        review_apis.RejectArtifactCandidateApi.as_view(),
        name="reject_artifact_candidate",
    ),
    path(
        "v1/artifact-candidates/revise",
        review_apis.ReviseArtifactCandidateApi.as_view(),
        name="revise_artifact_candidate",
    ),
    path("review/", include("review.urls")),
    path("accounts/", include("review.auth_urls")),
    path("admin/", admin.site.urls),
]
