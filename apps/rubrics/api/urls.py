from django.urls import path

from . import views

urlpatterns = [
    path("rubrics", views.RubricListView.as_view(), name="rubric-list"),
    path("rubrics/<str:rubric_id>", views.RubricDetailView.as_view(), name="rubric-detail"),
    path("rubrics/<str:rubric_id>/versions", views.RubricVersionListView.as_view(), name="rubric-versions"),
    path(
        "rubrics/<str:rubric_id>/versions/<int:version>", views.RubricVersionDetailView.as_view(), name="rubric-version"
    ),
]
