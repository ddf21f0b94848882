from django.urls import path

from . import views

urlpatterns = [
    path("test-sets", views.TestSetListView.as_view(), name="test-set-list"),
    path("test-sets/import", views.TestSetImportView.as_view(), name="test-set-import"),
    path("test-sets/<str:test_set_id>", views.TestSetDetailView.as_view(), name="test-set-detail"),
    path("test-sets/<str:test_set_id>/versions", views.TestSetVersionListView.as_view(), name="test-set-versions"),
    path(
        "test-sets/<str:test_set_id>/versions/<int:version>",
        views.TestSetVersionDetailView.as_view(),
        name="test-set-version",
    ),
    path(
        "test-sets/<str:test_set_id>/items/from-traces",
        views.TestSetItemsFromTracesView.as_view(),
        name="test-set-items-from-traces",
    ),
    path("test-sets/<str:test_set_id>/export", views.TestSetExportView.as_view(), name="test-set-export"),
    path(
        "test-sets/<str:test_set_id>/import", views.TestSetImportVersionView.as_view(), name="test-set-import-version"
    ),
    path("datasets", views.DatasetListView.as_view(), name="dataset-list"),
    path("datasets/<str:dataset_id>", views.DatasetDetailView.as_view(), name="dataset-detail"),
]
