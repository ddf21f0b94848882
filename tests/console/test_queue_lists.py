"""Issue 15, review queues: "items enter … by hand from any list". "Add to queue" on each row of
the run page's results (also as the live endpoint draws them), of the trace list (the session's
latest agentic evaluation) and of the RAG evaluation list, which is new; staff only, once per
queue, only queues of the row's kind; query counts that do not grow with the rows."""

import re
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.console.views import rag as rag_views
from apps.queues.models import QueueItem, QueueKind
from apps.rag.models import TraceEvaluation
from apps.runs.models import EvaluationResult, EvaluationRun
from apps.scores.services import human_score_record
from apps.scores.vocabulary import ScoreKind, SubjectKind
from tests.agentic.factories import AgentEvaluationFactory
from tests.queues.factories import ReviewQueueFactory, reviewable_result
from tests.rag.factories import TraceEvaluationFactory
from tests.rag.helpers import PARIS
from tests.runs.factories import EvaluationRunFactory, criterion, results_bulk_create, rule
from tests.traces.factories import AgentTraceFactory

pytestmark = pytest.mark.django_db
ADD = "/console/queues/add/"
RAG = "/console/rag/"


def forms_in(html: str) -> list[dict]:
    """Every "add to queue" row form of a page: its kind, target and the queues it offers."""
    found = []
    for form in re.findall(
        r'<form method="post" action="/console/queues/add/" class="add-to-queue">(.*?)</form>', html, re.S
    ):
        found.append(
            {
                "kind": re.search(r'name="kind" value="([^"]*)"', form).group(1),
                "target": re.search(r'name="target_id" value="([^"]*)"', form).group(1),
                "next": re.search(r'name="next" value="([^"]*)"', form).group(1),
                "queues": re.findall(r'<option value="\d+">([^<]*)</option>', form),
            }
        )
    return found


def reader() -> Client:
    from tests.core.factories import UserFactory

    client = Client()
    client.force_login(UserFactory(username="plain-reader"))
    return client


def run_with_results(n: int) -> EvaluationRun:
    run = EvaluationRunFactory()
    for position in range(n):
        reviewable_result(run=run, position=position, item_name=f"PTO {position}")
    return run


# The run page ----------------------------------------------------------------------------------


def test_run_table_offers_each_row_the_run_result_queues_only(staff_client):
    ReviewQueueFactory(kind=QueueKind.RUN_RESULT, name="Failed answers")
    ReviewQueueFactory(kind=QueueKind.AGENTIC_EVALUATION, name="Agentic spot checks")
    run = run_with_results(3)
    html = staff_client.get(f"/console/runs/{run.run_id}/").content.decode()
    forms = forms_in(html)
    assert sorted(f["target"] for f in forms) == sorted(str(r.result_id) for r in run.results.all())
    assert all(f["kind"] == "run_result" and f["queues"] == ["Failed answers"] for f in forms)
    assert all(f["next"] == f"/console/runs/{run.run_id}/" for f in forms)
    assert '<th scope="col">Add to review queue</th>' in html
    assert 'aria-label="Queue for PTO 0"' in html
    # "Add selected": one form for the table, its checkboxes in the rows, the same queues.
    bulk = re.search(r'<form [^>]*id="bulk-add".*?</form>', html, re.S).group(0)
    assert re.findall(r'<option value="\d+">([^<]*)</option>', bulk) == ["Failed answers"]
    assert html.count('form="bulk-add"') == 3


def test_readers_see_no_control_and_are_refused(reader_client):
    queue = ReviewQueueFactory(kind=QueueKind.RUN_RESULT)
    run = run_with_results(2)
    html = reader_client.get(f"/console/runs/{run.run_id}/").content.decode()
    assert forms_in(html) == [] and "review queue</th>" not in html
    live = reader_client.get(f"/console/runs/{run.run_id}/live/").json()
    assert live["rows"] and not any("add-to-queue" in row for row in live["rows"])
    result = run.results.first()
    response = reader_client.post(ADD, {"queue": queue.pk, "kind": "run_result", "target_id": str(result.result_id)})
    assert response.status_code == 403 and not queue.items.exists()


def test_without_a_queue_of_the_kind_there_is_no_column(staff_client):
    ReviewQueueFactory(kind=QueueKind.RAG_EVALUATION)
    run = run_with_results(1)
    html = staff_client.get(f"/console/runs/{run.run_id}/").content.decode()
    assert forms_in(html) == [] and "review queue</th>" not in html


def test_live_rows_carry_the_control_and_lead_back_to_the_run_page(staff_client):
    """The live endpoint draws rows with the run page's partial; their form must come back to the
    run page (under its filters), not to the JSON endpoint it was drawn by."""
    ReviewQueueFactory(kind=QueueKind.RUN_RESULT, name="Failed answers")
    run = EvaluationRunFactory(status=EvaluationRun.Status.RUNNING)
    result = reviewable_result(run=run, position=0, finished_at=timezone.now())
    live = staff_client.get(f"/console/runs/{run.run_id}/live/", {"after": "", "passed": "false"}).json()
    [row] = live["rows"]
    [form] = forms_in(row)
    assert form["target"] == str(result.result_id) and form["queues"] == ["Failed answers"]
    assert form["next"] == f"/console/runs/{run.run_id}/?passed=false"
    # The same row as the page draws it (the page and the poll must not disagree on columns).
    page = staff_client.get(f"/console/runs/{run.run_id}/").content.decode()
    assert row.count("<td") == re.search(rf'<tr [^>]*data-result-id="{result.result_id}".*?</tr>', page, re.S).group(
        0
    ).count("<td")


def test_post_adds_once_and_comes_back(staff_client):
    queue = ReviewQueueFactory(kind=QueueKind.RUN_RESULT, name="Failed answers")
    run = run_with_results(1)
    result = run.results.get()
    back = f"/console/runs/{run.run_id}/?passed=false"
    form = {"queue": queue.pk, "kind": "run_result", "target_id": str(result.result_id), "next": back}
    response = staff_client.post(ADD, form)
    assert response.status_code == 302 and response["Location"] == back
    again = staff_client.post(ADD, form, follow=True)
    assert "Already in the queue Failed answers; not added twice." in again.content.decode()
    # One item, made by hand: the unique constraint and the service keep it one.
    assert list(queue.items.values_list("subject_id", "origin")) == [(result.pk, QueueItem.Origin.HAND)]


def test_wrong_kind_is_refused(staff_client):
    """A form of one kind posted to a queue of another adds nothing, even where the number exists
    as the other kind (agentic and RAG evaluations are both numbered from 1)."""
    rag_queue = ReviewQueueFactory(kind=QueueKind.RAG_EVALUATION, name="RAG checks")
    agentic = AgentEvaluationFactory()
    TraceEvaluationFactory(pk=agentic.pk)
    response = staff_client.post(
        ADD, {"queue": rag_queue.pk, "kind": "agentic_evaluation", "target_id": str(agentic.pk)}, follow=True
    )
    assert "holds RAG evaluations, not agentic evaluations" in response.content.decode()
    result = reviewable_result()
    staff_client.post(ADD, {"queue": rag_queue.pk, "kind": "run_result", "target_id": str(result.result_id)})
    assert not rag_queue.items.exists()


# The trace list --------------------------------------------------------------------------------


def test_trace_list_adds_the_latest_evaluation_and_says_when_there_is_none(staff_client):
    queue = ReviewQueueFactory(kind=QueueKind.AGENTIC_EVALUATION, name="Agentic spot checks")
    ReviewQueueFactory(kind=QueueKind.RAG_EVALUATION, name="RAG checks")
    now = timezone.now()
    evaluated = AgentTraceFactory(start_time=now - timedelta(minutes=2))
    AgentEvaluationFactory(trace=evaluated, created_at=now - timedelta(minutes=1))
    latest = AgentEvaluationFactory(trace=evaluated, created_at=now)
    AgentTraceFactory(start_time=now - timedelta(minutes=1))  # never evaluated
    html = staff_client.get("/console/traces/").content.decode()
    [form] = forms_in(html)
    assert form == {
        "kind": "agentic_evaluation",
        "target": str(latest.pk),
        "next": "/console/traces/",
        "queues": ["Agentic spot checks"],
    }
    assert "not evaluated</span>" in html
    staff_client.post(ADD, {**form, "queue": queue.pk, "target_id": form["target"]})
    assert queue.items.get().subject_id == latest.pk
    assert forms_in(reader().get("/console/traces/").content.decode()) == []


# The RAG evaluation list and page --------------------------------------------------------------


def rag(question: str, scores: dict, *, status: dict | None = None, outcome="scored", age_minutes=0):
    status = status or {}
    evaluation = TraceEvaluationFactory(
        payload={**PARIS, "question": question, "tests": list(scores)},
        outcome=outcome,
        test_rows=[
            {"name": name, "score": score, "status": status.get(name, "scored")} for name, score in scores.items()
        ],
    )
    TraceEvaluation.objects.filter(pk=evaluation.pk).update(created_at=timezone.now() - timedelta(minutes=age_minutes))
    return evaluation


def listed(response) -> list[int]:
    return [int(pk) for pk in re.findall(r'<a href="/console/rag/(\d+)/">#', response.content.decode())]


def test_rag_list_newest_first_with_question_scores_and_control(staff_client):
    ReviewQueueFactory(kind=QueueKind.RAG_EVALUATION, name="RAG checks")
    ReviewQueueFactory(kind=QueueKind.RUN_RESULT, name="Failed answers")
    old = rag("Who wrote Pride and Prejudice?", {"context_recall": 1.0}, age_minutes=5)
    new = rag(
        "What is the capital of France?",
        {"answer_accuracy": 0.25, "faithfulness": None},
        status={"faithfulness": "error"},
    )
    response = staff_client.get(RAG)
    html = response.content.decode()
    assert response.status_code == 200 and listed(response) == [new.pk, old.pk]
    assert "What is the capital of France?" in html and 'href="/console/rag/"' in html  # the nav links it
    scores = re.sub(r"\s+", " ", html)
    assert '<dt>answer accuracy</dt> <dd><b class="fail">0.25</b>' in scores  # under 0.5: a failure
    assert '<dt>context recall</dt> <dd><b class="pass">1.00</b>' in scores
    assert '<dt>faithfulness</dt> <dd><span class="badge fail">error</span>' in scores
    forms = forms_in(html)
    assert [(f["kind"], f["target"], f["queues"]) for f in forms] == [
        ("rag_evaluation", str(new.pk), ["RAG checks"]),
        ("rag_evaluation", str(old.pk), ["RAG checks"]),
    ]
    # Readers read the list, without any form.
    html = reader().get(RAG).content.decode()
    assert "What is the capital of France?" in html and forms_in(html) == [] and 'id="bulk-add"' not in html


def test_rag_list_search_and_filters(staff_client):
    paris = rag("What is the capital of France?", {"answer_accuracy": 0.9, "context_recall": 0.2})
    austen = rag("Who wrote Pride and Prejudice?", {"context_recall": None}, status={"context_recall": "error"})
    missing = rag(
        "What is the capital of Spain?", {"faithfulness": None}, status={"faithfulness": "missing"}, outcome="missing"
    )
    assert listed(staff_client.get(RAG, {"q": "capital OF"})) == [missing.pk, paris.pk]
    assert listed(staff_client.get(RAG, {"q": f"#{austen.pk}"})) == [austen.pk]
    assert listed(staff_client.get(RAG, {"q": str(austen.pk)})) == [austen.pk]
    assert listed(staff_client.get(RAG, {"q": "9" * 40})) == []  # no such id, and no overflow
    assert listed(staff_client.get(RAG, {"status": "error"})) == [austen.pk]
    assert listed(staff_client.get(RAG, {"status": "below"})) == [paris.pk]  # context recall 0.2 < 0.5
    # Metric and status together: one metric that meets both (Paris's accuracy is scored, not low).
    assert listed(staff_client.get(RAG, {"test": "answer_accuracy", "status": "below"})) == []
    assert listed(staff_client.get(RAG, {"test": "context_recall", "status": "scored"})) == [paris.pk]
    assert listed(staff_client.get(RAG, {"outcome": "missing"})) == [missing.pk]
    bad = staff_client.get(RAG, {"status": "nonsense", "q": "Pride"})
    assert listed(bad) == [austen.pk] and "Select a valid choice" in bad.content.decode()
    assert "No RAG evaluations match these filters." in staff_client.get(RAG, {"q": "Mars"}).content.decode()


def test_rag_list_pages_keep_the_filters(staff_client, monkeypatch):
    monkeypatch.setattr(rag_views, "EVALUATIONS_PER_PAGE", 2)
    made = [rag(f"Question {n} about France?", {"context_recall": 1.0}, age_minutes=n) for n in range(5)]
    rag("Elsewhere", {"context_recall": 1.0})
    first = staff_client.get(RAG, {"q": "France"})
    html = first.content.decode()
    assert listed(first) == [made[0].pk, made[1].pk] and "Page 1 of 3" in html
    following = re.search(r'href="\?([^"]*)" rel="next"', html).group(1).replace("&amp;", "&")
    assert "q=France" in following
    assert listed(staff_client.get(RAG + "?" + following)) == [made[2].pk, made[3].pk]
    assert listed(staff_client.get(RAG, {"q": "France", "page": 3})) == [made[4].pk]
    # Past the end: the last page; not a number: the first (Paginator.get_page), never an error.
    assert listed(staff_client.get(RAG, {"q": "France", "page": 99})) == [made[4].pk]
    assert listed(staff_client.get(RAG, {"q": "France", "page": "x"})) == [made[0].pk, made[1].pk]


def test_rag_list_bulk_add_and_per_row_add_once(staff_client):
    queue = ReviewQueueFactory(kind=QueueKind.RAG_EVALUATION, name="RAG checks")
    first, second = rag("One?", {"context_recall": 1.0}), rag("Two?", {"context_recall": 0.1})
    html = staff_client.get(RAG).content.decode()
    assert 'id="bulk-add"' in html and f'value="{first.pk}" form="bulk-add"' in html
    staff_client.post(ADD, {"queue": queue.pk, "kind": "rag_evaluation", "target_id": str(first.pk)})
    response = staff_client.post(
        ADD,
        {"queue": queue.pk, "kind": "rag_evaluation", "next": RAG, "target_id": [str(first.pk), str(second.pk)]},
        follow=True,
    )
    assert "Added 1 to RAG checks; 1 already in the queue, not added twice." in response.content.decode()
    assert sorted(queue.items.values_list("subject_id", flat=True)) == sorted([first.pk, second.pk])
    # One id that names nothing: the others do not enter either, and the reviewer is told.
    third = rag("Three?", {"context_recall": 1.0})
    response = staff_client.post(
        ADD,
        {"queue": queue.pk, "kind": "rag_evaluation", "next": RAG, "target_id": [str(third.pk), "999999"]},
        follow=True,
    )
    assert "No rag evaluation &#x27;999999&#x27;" in response.content.decode()
    assert not queue.items.filter(subject_id=third.pk).exists()


def test_rag_list_says_when_no_queue_takes_rag_evaluations(staff_client):
    rag("One?", {"context_recall": 1.0})
    html = staff_client.get(RAG).content.decode()
    assert 'id="no-rag-queue"' in html and forms_in(html) == []
    assert 'id="no-rag-queue"' not in reader().get(RAG).content.decode()


def test_rag_page_shows_the_evaluation_its_reviews_and_queues(staff_client):
    queue = ReviewQueueFactory(kind=QueueKind.RAG_EVALUATION, name="RAG checks")
    evaluation = rag("What is the capital of France?", {"context_recall": 0.2, "answer_accuracy": 1.0})
    staff_client.post(ADD, {"queue": queue.pk, "kind": "rag_evaluation", "target_id": str(evaluation.pk)})
    human_score_record(
        subject_kind=SubjectKind.RAG_EVALUATION,
        subject_id=evaluation.pk,
        kind=ScoreKind.METRIC,
        key="context_recall",
        passed=True,
        note="ctx1 is the right one",
    )
    response = staff_client.get(f"{RAG}{evaluation.pk}/")
    html = re.sub(r"\s+", " ", response.content.decode())
    assert response.status_code == 200
    assert "What is the capital of France?" in html and "Paris is the capital of France." in html
    assert '<span class="badge pass">relevant</span>' in html  # ctx1 is a relevant context
    assert re.search(r'context recall</strong> <b class="fail">0.20</b>', html)
    assert "ctx1 is the right one" in html
    item = queue.items.get()
    assert f'href="/console/queues/{queue.pk}/items/{item.pk}/">RAG checks</a>' in html
    assert f'href="/api/v1/trace/history/{evaluation.pk}"' in html
    assert staff_client.get(f"{RAG}999999/").status_code == 404
    # The queue's pages lead back to it.
    assert f'href="/console/rag/{evaluation.pk}/"' in staff_client.get(f"/console/queues/{queue.pk}/").content.decode()
    assert (
        f'href="/console/rag/{evaluation.pk}/"'
        in staff_client.get(f"/console/queues/{queue.pk}/items/{item.pk}/").content.decode()
    )


def test_rag_pages_need_a_login(client, db):
    evaluation = rag("One?", {"context_recall": 1.0})
    for url in (RAG, f"{RAG}{evaluation.pk}/"):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/console/login/"), url


# Query counts ----------------------------------------------------------------------------------


def _count(client, url, params=None) -> int:
    client.get(url, params)  # warm the session and per-process probes
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url, params).status_code == 200
    return len(captured)


def test_query_counts_do_not_grow_with_rows_that_carry_the_control(staff_client):
    """With queues to offer, every row carries a form: the run page, its live endpoint, the trace
    list and the RAG list read as many queries with 3 rows as with 60."""
    ReviewQueueFactory(kind=QueueKind.RUN_RESULT)
    ReviewQueueFactory(kind=QueueKind.RUN_RESULT)
    ReviewQueueFactory(kind=QueueKind.AGENTIC_EVALUATION)
    ReviewQueueFactory(kind=QueueKind.RAG_EVALUATION)

    def running_run(n):
        run = EvaluationRunFactory(status=EvaluationRun.Status.RUNNING)
        results_bulk_create(
            [
                EvaluationResult(
                    run=run,
                    position=i,
                    test_case_id=uuid.UUID(int=900 + i),
                    item_name=f"item {i}",
                    item_type="single_turn",
                    item={},
                    state="done",
                    passed=False,
                    finished_at=timezone.now(),
                    criteria_scores=[criterion("c", False)],
                    rubric_scores=[rule("R1", True)],
                )
                for i in range(n)
            ]
        )
        EvaluationRun.objects.filter(pk=run.pk).update(total=n, completed=n)
        return run

    running_run(1)  # so that both measured runs have a previous run to compare with
    small, large = running_run(3), running_run(60)
    for path in ("/console/runs/{}/", "/console/runs/{}/live/"):
        counts = [_count(staff_client, path.format(run.run_id)) for run in (small, large)]
        assert counts[0] == counts[1], (path, counts)
    assert len(forms_in(staff_client.get(f"/console/runs/{large.run_id}/").content.decode())) == 50

    for _ in range(3):
        AgentEvaluationFactory(trace=AgentTraceFactory())
    few_traces = _count(staff_client, "/console/traces/")
    for _ in range(57):
        AgentEvaluationFactory(trace=AgentTraceFactory())
    assert _count(staff_client, "/console/traces/") == few_traces
    assert len(forms_in(staff_client.get("/console/traces/").content.decode())) == 50

    for n in range(3):
        rag(f"Q{n}?", {"context_recall": 1.0, "faithfulness": 0.3})
    few_rag = [_count(staff_client, RAG), _count(staff_client, RAG, {"q": "Q", "status": "below"})]
    for n in range(57):
        rag(f"Q{n}?", {"context_recall": 1.0, "faithfulness": 0.3})
    assert [_count(staff_client, RAG), _count(staff_client, RAG, {"q": "Q", "status": "below"})] == few_rag
    assert len(forms_in(staff_client.get(RAG).content.decode())) == 50
    assert few_rag[0] <= 8, "session, user, project and role, switcher's projects, count, page, test rows, queues"
