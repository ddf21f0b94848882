"""A reviewer works through a review queue from the keyboard in headless Chromium: p/f mark the
current verdict, n goes to the note, Ctrl+Enter saves and opens the next item, j/k move between
items. Screenshots of the queue list, the queue page and the reviewing page go to
test-output/screenshots/ (see tests/console/browser.py for the browser set-up)."""

import pytest
from django.contrib.auth import get_user_model

from apps.core.models import Project
from apps.queues import services
from apps.queues.models import QueueKind
from apps.runs.models import EvaluationResult
from tests.agentic.factories import AgentEvaluationFactory
from tests.console.browser import needs_chromium, screenshot, submit_and_wait_for_new_page, wait_for
from tests.queues.factories import reviewable_result
from tests.runs.factories import EvaluationRunFactory, verdict_reviews

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    needs_chromium,
]

QUESTIONS = [
    ("How many PTO days do I accrue per month?", "You accrue 1.5 PTO days per month, per the handbook."),
    ("Can I carry PTO over to next year?", "Yes, up to five days carry over."),
    ("What is the wifi password?", "I can't find that in the handbook; ask IT."),
]


def test_reviewer_works_through_a_queue_with_the_keyboard(browser, live_server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    get_user_model().objects.create_user("reviewer", password="review-pass-1", is_staff=True)
    run = EvaluationRunFactory()
    for position, (question, answer) in enumerate(QUESTIONS):
        reviewable_result(
            run=run,
            position=position,
            item_name=f"PTO {position}",
            input={"message": question},
            item={
                "type": "single_turn",
                "inputs": {"message": question},
                "expected": {"success_criteria": ["Mentions 15 days", "Cites the handbook"]},
            },
            output={
                "messages": [
                    {"role": "user", "content": question},
                    {"role": "assistant", "content": answer, "tool_calls": []},
                ]
            },
        )
    queue = services.queue_create(
        project=Project.objects.default(),
        name="Unassessed verdicts",
        kind=QueueKind.RUN_RESULT,
        include_unassessed=True,
        description="Results where the judge skipped or errored on a verdict.",
    )
    assert services.queue_fill(queue=queue) == 3
    agentic = services.queue_create(
        project=Project.objects.default(), name="Agentic spot checks", kind=QueueKind.AGENTIC_EVALUATION, sample_rate=1
    )
    AgentEvaluationFactory(task_adherence_reasoning="Answered the PTO question from the handbook.")
    services.queue_fill(queue=agentic)
    find = browser.find_element

    def keys(text):
        find(By.TAG_NAME, "body").send_keys(text)

    def on_item(n):
        return wait_for(
            lambda: f"item {queue.items.order_by('pk')[n].pk}" in find(By.TAG_NAME, "h1").text, message=f"item {n + 1}"
        )

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
    assert verdict_reviews(run=run).count() == 3 + 2 + 2

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


RAG_QUESTIONS = [
    ("Who wrote 'Pride and Prejudice'?", "Jane Austen", "Jane Austen authored Pride and Prejudice."),
    (
        "What is the boiling point of water at sea level?",
        "About 90 degrees.",
        "Water boils at 100 degrees Celsius at sea level.",
    ),
    ("Which planet is known as the red planet?", "Mars", "Mars looks red because of iron oxide."),
]


def _no_page_overflow(browser) -> bool:
    """Nothing but the tables' own scroll boxes is wider than the window."""
    return browser.execute_script(
        "return document.documentElement.scrollWidth <= document.documentElement.clientWidth + 1"
    )


def test_reviewer_adds_from_the_run_table_trace_list_and_rag_list(browser, live_server):
    """Issue 15: items enter a queue "by hand from any list". A reviewer adds a failed result from
    the run page's table and two RAG evaluations from the RAG list (one by its row, one with "add
    selected"), adding one twice; the trace list offers each evaluated session's latest evaluation."""
    import json

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from apps.agentic.demo import load_demo_evaluations
    from apps.rag.demo import load_demo_trace_evaluations
    from apps.rag.services import trace_evaluation_create
    from apps.traces.demo import load_demo_traces
    from tests.console.browser import click_and_wait_for_new_page
    from tests.traces.factories import AgentTraceFactory

    get_user_model().objects.create_user("reviewer", password="review-pass-1", is_staff=True)
    run = EvaluationRunFactory(label="PTO answers, nightly")
    for position, (question, answer) in enumerate(QUESTIONS):
        reviewable_result(
            run=run,
            position=position,
            item_name=f"PTO {position}",
            input={"message": question},
            output={
                "messages": [
                    {"role": "user", "content": question},
                    {"role": "assistant", "content": answer, "tool_calls": []},
                ]
            },
        )
    results_queue = services.queue_create(
        project=Project.objects.default(), name="Failed answers", kind=QueueKind.RUN_RESULT
    )
    double_check = services.queue_create(
        project=Project.objects.default(), name="Results to double-check", kind=QueueKind.RUN_RESULT
    )
    services.queue_create(
        project=Project.objects.default(), name="Agentic spot checks", kind=QueueKind.AGENTIC_EVALUATION
    )
    rag_queue = services.queue_create(
        project=Project.objects.default(), name="RAG answers to check", kind=QueueKind.RAG_EVALUATION
    )
    load_demo_traces()
    load_demo_evaluations()
    AgentTraceFactory(user_query="Scale the payments deployment to five replicas")  # a session not evaluated
    load_demo_trace_evaluations()
    for question, answer, context in RAG_QUESTIONS:
        trace_evaluation_create(
            query=json.dumps(
                {
                    "tests": ["answer_accuracy", "context_recall", "faithfulness"],
                    "question": question,
                    "answer": answer,
                    "ground_truth": context.split(" because")[0],
                    "contexts": [{"id": "c1", "text": context}],
                    "relevant_context_ids": ["c1"],
                }
            ),
            partial=False,
            use_llm=False,
        )
    find = browser.find_element

    browser.get(f"{live_server.url}/console/runs/{run.run_id}/")
    find(By.NAME, "username").send_keys("reviewer")
    submit_and_wait_for_new_page(browser, find(By.NAME, "password"), "review-pass-1")
    first_row = find(By.CSS_SELECTOR, "#results-table tbody tr[data-result-id]")
    target = first_row.get_attribute("data-result-id")
    # Issue 20 point 6: with a queue, the results table fits a 1440 px window, no sideways scroll.
    browser.set_window_size(1440, 900)
    wrap = "document.querySelector('#results-table').parentElement"
    assert browser.execute_script(f"return {wrap}.scrollWidth <= {wrap}.clientWidth + 1"), (
        "the table scrolls at 1440 px"
    )
    # The row's queue control is a drop-down menu (so the table fits): opened, it offers the queues.
    first_row.find_element(By.CSS_SELECTOR, "details.queue-menu > summary").click()
    Select(first_row.find_element(By.NAME, "queue")).select_by_visible_text("Failed answers")
    for width, name in ((1366, "queues-10-run-add-to-queue"), (820, "queues-10-run-add-to-queue-tablet")):
        browser.set_window_size(width, 900)
        assert _no_page_overflow(browser), f"the run page overflows at {width} px"
        screenshot(browser, name, width=width)
    click_and_wait_for_new_page(browser, first_row.find_element(By.CSS_SELECTOR, ".queue-cell button"))
    assert browser.current_url.endswith(f"/console/runs/{run.run_id}/")
    assert "Added to Failed answers." in find(By.CSS_SELECTOR, ".messagelist").text
    assert str(EvaluationResult.objects.get(pk=results_queue.items.get().subject_id).result_id) == target
    # Two rows ticked, one form: both enter the other queue.
    boxes = browser.find_elements(By.CSS_SELECTOR, "#results-table input[type=checkbox]")
    for box in boxes[1:]:
        box.click()
    Select(find(By.ID, "bulk-queue")).select_by_visible_text("Results to double-check")
    click_and_wait_for_new_page(browser, find(By.ID, "bulk-add-button"))
    assert "Added 2 to Results to double-check." in find(By.CSS_SELECTOR, ".messagelist").text
    assert double_check.items.count() == 2

    click_and_wait_for_new_page(browser, find(By.LINK_TEXT, "Traces"))
    rows = find(By.ID, "traces").find_elements(By.CSS_SELECTOR, "tbody tr")
    offered = [row for row in rows if row.find_elements(By.CSS_SELECTOR, ".add-to-queue")]
    assert offered and len(offered) < len(rows), "evaluated sessions only"
    assert "not evaluated" in find(By.ID, "traces").text
    for width, name in ((1366, "queues-11-trace-list"), (820, "queues-11-trace-list-tablet")):
        browser.set_window_size(width, 900)
        assert _no_page_overflow(browser), f"the trace list overflows at {width} px"
        screenshot(browser, name, width=width)

    click_and_wait_for_new_page(browser, find(By.LINK_TEXT, "RAG evaluations"))
    assert "RAG evaluations" in find(By.TAG_NAME, "h1").text
    table = find(By.ID, "rag-evaluations")
    assert "Which planet is known as the red planet?" in table.text
    for width, name in ((1366, "queues-12-rag-list"), (820, "queues-12-rag-list-tablet")):
        browser.set_window_size(width, 900)
        assert _no_page_overflow(browser), f"the RAG list overflows at {width} px"
        screenshot(browser, name, width=width)
    # Search the question text, then add the one found by its row.
    submit_and_wait_for_new_page(browser, find(By.NAME, "q"), "boiling point")
    [row] = find(By.ID, "rag-evaluations").find_elements(By.CSS_SELECTOR, "tbody tr")
    boiling = row.find_element(By.CSS_SELECTOR, "input[name=target_id][type=hidden]").get_attribute("value")
    click_and_wait_for_new_page(browser, row.find_element(By.CSS_SELECTOR, ".queue-cell button"))
    assert "q=boiling" in browser.current_url
    assert "Added to RAG answers to check." in find(By.CSS_SELECTOR, ".messagelist").text
    # Then, over the whole list, two selected at once: the one already in the queue is not added twice.
    click_and_wait_for_new_page(browser, find(By.LINK_TEXT, "Clear"))
    checkboxes = {
        box.get_attribute("value"): box
        for box in browser.find_elements(By.CSS_SELECTOR, "#rag-evaluations input[type=checkbox]")
    }
    other = next(pk for pk in checkboxes if pk != boiling)
    checkboxes[boiling].click()
    checkboxes[other].click()
    click_and_wait_for_new_page(browser, find(By.ID, "bulk-add-button"))
    assert (
        "Added 1 to RAG answers to check; 1 already in the queue, not added twice."
        in find(By.CSS_SELECTOR, ".messagelist").text
    )
    assert sorted(rag_queue.items.values_list("subject_id", flat=True)) == sorted([int(boiling), int(other)])

    browser.get(f"{live_server.url}/console/rag/{boiling}/")
    assert "About 90 degrees." in find(By.ID, "rag-answer").text
    assert "RAG answers to check" in find(By.ID, "in-queues").text
    for width, name in ((1366, "queues-13-rag-evaluation"), (820, "queues-13-rag-evaluation-tablet")):
        browser.set_window_size(width, 900)
        assert _no_page_overflow(browser), f"the RAG evaluation page overflows at {width} px"
        screenshot(browser, name, width=width)
    # From the RAG evaluation to its queue item, where it is reviewed.
    click_and_wait_for_new_page(browser, find(By.ID, "in-queues").find_element(By.TAG_NAME, "a"))
    assert "Open the RAG evaluation" in find(By.CLASS_NAME, "evidence").text
