from django.urls import path

from . import views

urlpatterns = [
    path("projects", views.ProjectListView.as_view(), name="project-list"),
    path("projects/<slug:slug>", views.ProjectDetailView.as_view(), name="project-detail"),
    path("projects/<slug:slug>/members", views.ProjectMemberListView.as_view(), name="project-members"),
    path(
        "projects/<slug:slug>/members/<str:username>",
        views.ProjectMemberDetailView.as_view(),
        name="project-member-detail",
    ),
]
