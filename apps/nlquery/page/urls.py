from django.urls import path

from . import views

app_name = "nlquery"
urlpatterns = [
    path("", views.metrics_query_page, name="page"),
]
