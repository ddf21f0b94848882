"""The rubric list's filters (rubrics.selectors.rubric_list applies them)."""

from apps.bots.filters import OfBotFilter

from .models import Rubric


class RubricFilter(OfBotFilter):
    class Meta:
        model = Rubric
        fields: list[str] = []  # only OfBotFilter's agent_id
