"""The filter every list of rows that belong to a bot shares (rubrics, test sets, question sets):
`agent_id` names the bot. Each app's FilterSet extends OfBotFilter for its model
(apps/rubrics/filters.py, apps/testsets/filters.py), and its `<noun>_list` selector applies it."""

import django_filters

from .selectors import bot_get


class OfBotFilter(django_filters.FilterSet):
    """Rows of the bot `agent_id`. A filter naming no bot is a NotFoundError (a 404 at the API), not
    an empty list; a blank `agent_id` names none either, so it is checked on the data as given (the
    form would read a blank value as no filter at all)."""

    agent_id = django_filters.CharFilter(field_name="bot__agent_id")

    def __init__(self, data=None, queryset=None, *, project, **kwargs):
        # The project whose bot `agent_id` names: the queryset is that project's rows already.
        self.project = project
        super().__init__(data, queryset, **kwargs)

    def filter_queryset(self, queryset):
        agent_id = self.data.get("agent_id")
        if agent_id is not None:
            bot_get(agent_id, project=self.project)
        return super().filter_queryset(queryset)
