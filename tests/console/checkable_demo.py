"""The demo test set with PTO criteria the offline judge checks (issue 20)."""

import copy

from apps.testsets.demo import DEMO_TEST_SET, DEMO_TEST_SET_ID
from apps.testsets.models import TestSet
from apps.testsets.schemas import TestSetContent
from apps.testsets.services import testset_publish_version

# Criteria the offline judge checks for the demo's two PTO items. In the demo's prose it skips them
# (issue 20: they used to pass by proxy), so without these nothing regresses when the PTO policy goes.
CHECKABLE_PTO_CRITERIA = {
    "PTO Policy Inquiry": ['Response mentions "15 days"'],
    "PTO Carry-over Conversation": ['Agent says "5 days"'],
}


def publish_checkable_demo_test_set() -> int:
    """A new version of the demo test set with CHECKABLE_PTO_CRITERIA; returns its version."""
    content = copy.deepcopy(DEMO_TEST_SET)
    for item in content["items"]:
        if item["name"] in CHECKABLE_PTO_CRITERIA:
            item["expected"]["success_criteria"] = CHECKABLE_PTO_CRITERIA[item["name"]]
    head, _ = testset_publish_version(
        test_set=TestSet.objects.get(pk=DEMO_TEST_SET_ID),
        content=TestSetContent.model_validate(content),
        changelog="checkable",
        author="t",
    )
    return head.current_version
