"""A reviewer works through a review queue from the keyboard in headless Chromium: p/f mark the
current verdict, n goes to the note, Ctrl+Enter saves and opens the next item, j/k move between
items. Screenshots of the queue list, the queue page and the reviewing page go to
test-output/screenshots/ (see tests/console/browser.py for the browser set-up)."""

import pytest
from django.contrib.auth import get_user_model

from apps.queues import services
from apps.queues.models import QueueKind
from apps.runs.models import VerdictReview
from tests.agentic.factories import AgentEvaluationFactory
from tests.console.browser import needs_chromium, screenshot, submit_and_wait_for_new_page, wait_for
from tests.queues.factories import reviewable_result
from tests.runs.factories import EvaluationRunFactory

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    needs_chromium,
]

QUESTIONS = [("How many PTO days do I accrue per month?", "You accrue 1.5 PTO days per month, per the handbook."),
             ("Can I carry PTO over to next year?", "Yes, up to five days carry over."),
             ("What is the wifi password?", "I can't find that in the handbook; ask IT.")]


def test_reviewer_works_through_a_queue_with_the_keyboard(browser, live_server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    get_user_model().objects.create_user("reviewer", password="review-pass-1", is_staff=True)
    run = EvaluationRunFactory()
    for position, (question, answer) in enumerate(QUESTIONS):
        reviewable_result(run=run, position=position, item_name=f"PTO {position}", input={"message": question},
                          item={"type": "single_turn", "inputs": {"message": question},
                                "expected": {"success_criteria": ["Mentions 15 days", "Cites the handbook"]}},
                          output={"messages": [{"role": "user", "content": question},
                                               {"role": "assistant", "content": answer, "tool_calls": []}]})
    queue = services.queue_create(name="Unassessed verdicts", kind=QueueKind.RUN_RESULT, include_unassessed=True,
                                  description="Results where the judge skipped or errored on a verdict.")
    assert services.queue_fill(queue=queue) == 3
    agentic = services.queue_create(name="Agentic spot checks", kind=QueueKind.AGENTIC_EVALUATION, sample_percent=100)
    AgentEvaluationFactory(task_adherence_reasoning="Answered the PTO question from the handbook.")
    services.queue_fill(queue=agentic)
    find = browser.find_element

    def keys(text):
        find(By.TAG_NAME, "body").send_keys(text)

    def on_item(n):
        return wait_for(lambda: f"item {queue.items.order_by('pk')[n].pk}" in find(By.TAG_NAME, "h1").text,
                        message=f"item {n + 1}")

    browser.get(f"{live_server.url}/console/queues/")
    find(By.NAME, "username").send_keys("reviewer")
    submit_and_wait_for_new_page(browser, find(By.NAME, "password"), "review-pass-1")
    assert browser.current_url.endswith("/console/queues/")
    assert "0/3 done" in find(By.ID, "queues").text
    screenshot(browser, "queues-01-list")

    find(By.LINK_TEXT, "Unassessed verdicts").click()
    wait_for(lambda: find(By.ID, "start-review"), message="the queue page").click()
    on_item(0)
    # Two criteria then two rules: pass, fail, pass, and leave the skipped rule to the note.
    keys("pfp")
    assert len(browser.find_elements(By.CSS_SELECTOR, ".review-row.marked")) == 3
    keys("n")
    assert browser.switch_to.active_element.get_attribute("id") == "review-note"
    browser.switch_to.active_element.send_keys("Cites the handbook only in passing.")
    screenshot(browser, "queues-03-reviewing")
    browser.switch_to.active_element.send_keys(Keys.CONTROL, Keys.ENTER)
    on_item(1)
    keys("k")
    on_item(0)
    keys("j")
    on_item(1)
    keys("ff")
    find(By.ID, "review-note").send_keys(Keys.CONTROL, Keys.ENTER)
    on_item(2)
    keys("pp")
    find(By.ID, "review-note").send_keys(Keys.CONTROL, Keys.ENTER)
    # The last item saved: back on the queue page, nothing left.
    wait_for(lambda: find(By.ID, "queue-left").text == "0", message="the queue page with nothing left")
    assert "reviewer" in find(By.ID, "reviewers").text
    # Judge said pass on every "Mentions 15 days", humans not: kappa 0; one BRIEF pair in one class: undefined.
    agreement = find(By.ID, "agreement").text
    assert "Mentions 15 days 3 2 1 0 0 0.00" in agreement and "BRIEF 1 1 0 0 0 —" in agreement
    screenshot(browser, "queues-02-queue")
    assert queue.items.filter(done_at__isnull=False).count() == 3
    assert VerdictReview.objects.filter(result__run=run).count() == 3 + 2 + 2

    # An agentic evaluation gets a human score per metric: p and f give 1 and 0, the field takes any.
    browser.get(f"{live_server.url}/console/queues/{agentic.pk}/")
    assert "Assign" in find(By.ID, "queue-items").text
    screenshot(browser, "queues-05-agentic-queue")
    browser.get(f"{live_server.url}/console/queues/{agentic.pk}/review/")
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "input[type=number]"), message="the agentic item")
    keys("pf")
    screenshot(browser, "queues-04-agentic-reviewing")
    find(By.ID, "review-note").send_keys(Keys.CONTROL, Keys.ENTER)
    wait_for(lambda: find(By.ID, "queue-left").text == "0", message="the agentic queue done")
    assert "task adherence" in find(By.ID, "agreement").text
