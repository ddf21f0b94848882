"""The queue item list's filters (queues.selectors.queue_item_list applies them, for the API's
`?state=` and the console's tabs alike)."""

import django_filters

from .models import QueueItem


class QueueItemFilter(django_filters.FilterSet):
    """state: `left` (not reviewed yet) or `done`; anything else is every item (the console's "all" tab)."""

    state = django_filters.ChoiceFilter(choices=[("left", "left"), ("done", "done")], method="in_state")

    class Meta:
        model = QueueItem
        fields: list[str] = []

    def in_state(self, queryset, name, value):
        return queryset.filter(done_at__isnull=value == "left")
