"""URL routes. /v1 is the public API (context_api); /review is the Review Inbox; /admin audits."""

from django.contrib import admin
from django.urls import include, path

from context_api import apis, contract_apis, metrics, operator
from context_api.mcp.views import mcp_endpoint
from context_api.operations import OPERATIONS

# Browser routes get HTML error pages, everything else the JSON envelope (context_api.errors).
handler400 = "context_api.errors.bad_request"
handler403 = "context_api.errors.permission_denied"
handler404 = "context_api.errors.not_found"
handler500 = "context_api.errors.server_error"

urlpatterns = [
    path("health/live", apis.LivenessApi.as_view(), name="get_liveness"),
    path("health/ready", apis.ReadinessApi.as_view(), name="get_readiness"),
    path("health/detail", operator.HealthDetailApi.as_view(), name="get_health_detail"),
    path("metrics", metrics.metrics_view, name="get_metrics"),
    path("v1/capabilities", apis.CapabilitiesApi.as_view(), name="get_capabilities"),
    path("v1/stats", apis.get_stats_view, name="get_stats"),
    path("v1/openapi.json", contract_apis.OpenApiDocumentApi.as_view(), name="get_openapi"),
    path("v1/docs", contract_apis.ApiDocsApi.as_view(), name="api_docs"),
    *(
        path(op.path, apis.OperationApi.as_view(operation=op), name=op.operation_id)
        for op in OPERATIONS.values()
    ),
    # Exactly /mcp: no trailing slash, so APPEND_SLASH has nothing to redirect.
    path("mcp", mcp_endpoint, name="mcp"),
    path("review/", include("review.urls")),
    path("accounts/", include("review.auth_urls")),
    path("admin/", admin.site.urls),
]
