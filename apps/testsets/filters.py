"""The test set and question set lists' filters (testsets.selectors.testset_list and dataset_list
apply them)."""

from apps.bots.filters import OfBotFilter

from .models import Dataset, TestSet


class TestSetFilter(OfBotFilter):
    class Meta:
        model = TestSet
        fields: list[str] = []  # only OfBotFilter's agent_id


class DatasetFilter(OfBotFilter):
    class Meta:
        model = Dataset
        fields: list[str] = []  # only OfBotFilter's agent_id
