from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from apps.core.http.views import ApiDocsView, ApiSchemaView, api_not_found, healthz, not_found, readyz, server_error
from apps.core.metrics.access import metrics_view
from apps.rag.api.views import TraceView
from apps.traces.api.views import IngestionLedgerView
from apps.traces.ingestion.otlp.views import OtlpTracesView

urlpatterns = [
    path("", RedirectView.as_view(url="/console/", permanent=False)),
    path("console/", include("apps.console.urls")),
    path("admin/", admin.site.urls),
    path("api/schema/", ApiSchemaView.as_view(), name="schema"),
    path("api/docs/", ApiDocsView.as_view(url_name="schema"), name="swagger-ui"),
    path("api/v1/metrics/", include("apps.traces.api.urls")),
    path("api/v1/metrics/", include("apps.agentic.api.urls")),
    path("api/v1/ingestion/ledger", IngestionLedgerView.as_view(), name="ingestion-ledger"),
    path("api/v1/", include("apps.nlquery.api.urls")),
    path("api/v1/", include("apps.rag.api.urls")),
    # The TRACE contract's own path; the same view as /api/v1/trace.
    path("trace", TraceView.as_view(), name="trace"),
    # OTLP/HTTP's own path: exporters append /v1/traces to OTEL_EXPORTER_OTLP_ENDPOINT.
    path("v1/traces", OtlpTracesView.as_view(), name="otlp-traces"),
    path("api/v1/", include("apps.bots.api.urls")),
    path("api/v1/", include("apps.rubrics.api.urls")),
    path("api/v1/", include("apps.testsets.api.urls")),
    path("api/v1/", include("apps.runs.api.urls")),
    path("api/v1/", include("apps.queues.api.urls")),
    path("api/v1/", include("apps.agentic.rules.api.urls")),
    path("api/v1/", include("apps.core.api.projects.urls")),
    path("metrics-query/", include("apps.nlquery.page.urls")),
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics_view, name="prometheus-django-metrics"),
    # Anything else under /api/ answers JSON, not the HTML 404 page.
    path("api/<path:rest>", api_not_found),
]

handler404 = not_found
handler500 = server_error
