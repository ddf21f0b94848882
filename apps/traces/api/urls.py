from django.urls import path

from . import views

urlpatterns = [
    path("traces", views.TraceStartView.as_view(), name="trace-start"),
    path("traces/batch", views.TraceBatchView.as_view(), name="trace-batch"),
    path("traces/<str:session_id>/intent", views.TraceIntentView.as_view(), name="trace-intent"),
    path("traces/<str:session_id>/tool-calls", views.TraceToolCallsView.as_view(), name="trace-tool-calls"),
    path("traces/<str:session_id>/complete", views.TraceCompleteView.as_view(), name="trace-complete"),
    path("trace/<str:session_id>", views.TraceDetailView.as_view(), name="trace-detail"),
    path("trace/<str:session_id>/tool-calls", views.TraceToolCallPageView.as_view(), name="trace-tool-call-page"),
]
