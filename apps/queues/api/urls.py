from django.urls import path

from . import views

urlpatterns = [
    path("queues", views.QueuesView.as_view(), name="queues"),
    path("queues/<int:queue_id>", views.QueueDetailView.as_view(), name="queue-detail"),
    path("queues/<int:queue_id>/fill", views.QueueFillView.as_view(), name="queue-fill"),
    path("queues/<int:queue_id>/items", views.QueueItemsView.as_view(), name="queue-items"),
    path("queues/<int:queue_id>/items/<int:item_id>/assign", views.ItemAssignView.as_view(), name="queue-item-assign"),
    path("queues/<int:queue_id>/items/<int:item_id>/claim", views.ItemClaimView.as_view(), name="queue-item-claim"),
    path("queues/<int:queue_id>/items/<int:item_id>/review", views.ItemReviewView.as_view(), name="queue-item-review"),
]
