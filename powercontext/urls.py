"""URL routes. /v1 is the public API (context_api); /review is the Review Inbox; /admin audits."""

from django.contrib import admin
from django.urls import include, path

from context_api import apis
from context_api.operations import OPERATIONS

handler404 = "context_api.errors.json_not_found"
handler500 = "context_api.errors.json_server_error"

urlpatterns = [
    path("health/live", apis.LivenessApi.as_view(), name="get_liveness"),
    path("health/ready", apis.ReadinessApi.as_view(), name="get_readiness"),
    path("v1/capabilities", apis.CapabilitiesApi.as_view(), name="get_capabilities"),
    path("v1/stats", apis.get_stats_view, name="get_stats"),
    path("v1/openapi.json", apis.openapi_document, name="get_openapi"),
    path("v1/docs", apis.api_docs, name="api_docs"),
    *(
        path(op.path, apis.OperationApi.as_view(operation=op), name=op.operation_id)
        for op in OPERATIONS.values()
    ),
    path("review/", include("review.urls")),
    path("accounts/", include("review.auth_urls")),
    path("admin/", admin.site.urls),
]
