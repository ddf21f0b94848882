"""apps/queues/filters.py: the item list's state filter, as the API and the console's tabs use it."""

import pytest
from django.utils import timezone

from apps.queues import selectors
from tests.queues.factories import QueueItemFactory, ReviewQueueFactory

pytestmark = pytest.mark.django_db


def test_items_left_done_or_all_and_an_unknown_state_is_all():
    queue = ReviewQueueFactory()
    left = QueueItemFactory(queue=queue)
    done = QueueItemFactory(queue=queue, done_at=timezone.now())

    def pks(**filters):
        return [item.pk for item in selectors.queue_item_list(queue=queue, filters=filters)]

    assert pks() == [left.pk, done.pk]
    assert pks(state="left") == [left.pk]
    assert pks(state="done") == [done.pk]
    # The console's "all" tab sends no state or an empty one; a hand-typed other value shows all
    # too, as before (the API's query model answers 422 for it first).
    assert pks(state="") == pks(state="sleeping") == [left.pk, done.pk]
