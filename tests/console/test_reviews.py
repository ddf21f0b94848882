"""Human review: the arithmetic (overrides, item verdicts, Cohen's kappa) and the API."""

import uuid
from types import SimpleNamespace

import pytest

from apps.runs import selectors, services
from apps.runs.reviews import human_passed, in_force
from apps.scores.agreement import agreement_table, cohen_kappa
from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory, criterion, rule, verdict_reviews


def review(kind, key, passed, judge_passed=True, status="ok", result_id=1):
    return SimpleNamespace(
        kind=kind, key=key, passed=passed, judge_passed=judge_passed, judge_status=status, result_id=result_id
    )


def test_cohen_kappa_known_values():
    # Perfect agreement with both classes present.
    assert cohen_kappa([True, False, True, False], [True, False, True, False]) == 1.0
    # Systematic disagreement.
    assert cohen_kappa([True, False, True, False], [False, True, False, True]) == -1.0
    # The textbook 2x2 table: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> po .7, pe .5, kappa .4.
    judge = [True] * 25 + [False] * 25
    human = [True] * 20 + [False] * 5 + [True] * 10 + [False] * 15
    assert cohen_kappa(judge, human) == pytest.approx(0.4)
    # Undefined: no pairs, or both raters always in the same single class.
    assert cohen_kappa([], []) is None
    assert cohen_kappa([True, True], [True, True]) is None
    # One rater constant, the other not: chance agreement < 1, kappa is defined (0 here).
    assert cohen_kappa([True, True, True, True], [True, True, False, False]) == 0.0


def test_newest_review_is_in_force_and_overrides_the_item_verdict():
    criteria = [criterion("a", True), criterion("b", False)]
    rules = [rule("R1", True, "high"), rule("R2", False, "low")]
    assert human_passed(criteria=criteria, rules=rules, latest={}) is None, "nobody reviewed it"
    reviews = [review("criterion", "b", False), review("criterion", "b", True)]
    assert human_passed(criteria=criteria, rules=rules, latest=in_force(reviews)) is True
    # A reviewer failing a high-severity rule fails the item; a low one does not.
    assert (
        human_passed(criteria=[criterion("a", True)], rules=rules, latest=in_force([review("rule", "R1", False)]))
        is False
    )
    assert (
        human_passed(criteria=[criterion("a", True)], rules=rules, latest=in_force([review("rule", "R2", False)]))
        is True
    )
    # A criterion the judge errored on counts as failed until a human passes it.
    errored = [criterion("a", False, status="error")]
    assert human_passed(criteria=errored, rules=None, latest={}) is None
    assert (
        human_passed(
            criteria=errored,
            rules=None,
            latest=in_force([review("criterion", "a", True, judge_passed=None, status="error")]),
        )
        is True
    )


def test_agreement_table_counts_only_judged_verdicts():
    """Over (kind, key, human passed, human value, judge status, judge passed, judge value, subject)
    pairs, as scores.agreement.judge_human_pairs reads them: the human score in force beside the
    judge's."""
    reviews = [
        ("rule", "R1", True, None, "ok", True, None, 1),
        ("rule", "R1", False, None, "ok", True, None, 2),
        ("rule", "R1", False, None, "ok", False, None, 3),
        ("rule", "R1", True, None, "error", None, None, 4),
        ("criterion", "c", True, None, "ok", False, None, 5),
    ]
    rows = {(r.kind, r.key): r for r in agreement_table(reviews)}
    r1 = rows[("rule", "R1")]
    assert (r1.reviewed, r1.agreed, r1.judge_pass_human_fail, r1.judge_fail_human_pass, r1.judge_unassessed) == (
        3,
        2,
        1,
        0,
        1,
    )
    # judge [T, T, F], human [T, F, F]: po 2/3, pe (2/3*1/3 + 1/3*2/3) = 4/9, kappa (2/3-4/9)/(5/9) = 0.4
    assert r1.kappa == pytest.approx(0.4)
    assert r1.disagreements == [2], "the subject where they differ; not the one the judge left unscored"
    assert r1.confusion == {
        "judge_pass": {"human_pass": 1, "human_fail": 1},
        "judge_fail": {"human_pass": 0, "human_fail": 1},
    }
    assert rows[("criterion", "c")].judge_fail_human_pass == 1


@pytest.fixture
def judged(db):
    run = EvaluationRunFactory()
    return EvaluationResultFactory(
        run=run,
        position=0,
        criteria_scores=[criterion("Mentions 15 days", True), criterion("Cites the handbook", False)],
        rubric_scores=[rule("BRIEF", True, "high"), rule("TONE", False, "low", status="error")],
    )


def test_api_review_keeps_the_judge_verdict_and_changes_the_human_one(staff_api, api, judged):
    url = f"/api/v1/results/{judged.result_id}/reviews"
    created = staff_api.post(
        url,
        {"kind": "criterion", "key": "Cites the handbook", "passed": True, "note": "It does cite it — «Handbook §4»"},
        format="json",
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["judge_passed"] is False and body["passed"] is True and body["in_force"] is True
    assert body["reviewer"] == "staff-user" and body["note"].endswith("«Handbook §4»")

    detail = api.get(f"/api/v1/results/{judged.result_id}").json()
    assert detail["passed"] is False, "the judge's verdict is kept"
    assert detail["human_passed"] is True
    assert [r["key"] for r in detail["reviews"]] == ["Cites the handbook"]
    assert detail["criteria_scores"][1]["passed"] is False

    # A later review of the same verdict supersedes the first; both stay listed.
    staff_api.post(url, {"kind": "criterion", "key": "Cites the handbook", "passed": False}, format="json")
    listed = api.get(url).json()
    assert [r["in_force"] for r in listed] == [False, True]
    assert api.get(f"/api/v1/results/{judged.result_id}").json()["human_passed"] is False

    # An errored rule verdict can be reviewed; the review records that the judge gave none.
    errored = staff_api.post(url, {"kind": "rule", "key": "TONE", "passed": True}, format="json").json()
    assert errored["judge_passed"] is None and errored["judge_status"] == "error"


@pytest.mark.parametrize(
    "body, fragment",
    [
        ({"kind": "verdict", "key": "BRIEF", "passed": True}, "kind"),
        ({"kind": "rule", "key": "BRIEF", "passed": "yes"}, "passed"),
        ({"kind": "rule", "passed": True}, "key"),
        ({"kind": "rule", "key": "", "passed": True}, "key"),
        ({"kind": "rule", "key": "BRIEF", "passed": True, "note": "x" * 5001}, "note"),
        ({"kind": "rule", "key": "NO_SUCH_RULE", "passed": True}, "NO_SUCH_RULE"),
        ({"kind": "criterion", "key": "BRIEF", "passed": True}, "BRIEF"),
    ],
)
def test_api_review_bad_input_is_422_and_writes_nothing(staff_api, judged, body, fragment):
    response = staff_api.post(f"/api/v1/results/{judged.result_id}/reviews", body, format="json")
    assert response.status_code == 422, response.json()
    assert fragment in str(response.json()["detail"])
    assert not verdict_reviews().exists()


def test_api_review_auth_and_unknown_ids(default_key_api, anon_api, staff_api, judged, allow_anonymous):
    url = f"/api/v1/results/{judged.result_id}/reviews"
    body = {"kind": "rule", "key": "BRIEF", "passed": False}
    assert default_key_api.post(url, body, format="json").status_code == 403
    assert anon_api.post(url, body, format="json").status_code == 401, "anonymous access never writes reviews"
    assert anon_api.get(url).status_code == 200
    missing = uuid.uuid4()
    assert staff_api.post(f"/api/v1/results/{missing}/reviews", body, format="json").status_code == 404
    assert staff_api.get(f"/api/v1/results/{missing}").json()["detail"] == f"No result {missing}"
    assert not verdict_reviews().exists()


def test_api_review_needs_a_key_without_anonymous_access(anon_api, judged):
    assert anon_api.get(f"/api/v1/results/{judged.result_id}/reviews").status_code == 401


def test_api_review_of_an_unfinished_result_is_409(staff_api, judged):
    judged.state = "running"
    judged.save(update_fields=["state"])
    response = staff_api.post(
        f"/api/v1/results/{judged.result_id}/reviews", {"kind": "rule", "key": "BRIEF", "passed": False}, format="json"
    )
    assert response.status_code == 409 and "not finished" in response.json()["detail"]


def test_service_records_the_reviewer(judged, django_user_model):
    user = django_user_model.objects.create_user("ana", is_staff=True)
    made = services.verdict_review_create(
        result=judged, kind="rule", key="BRIEF", passed=False, note="  too long ", reviewer=user
    )
    # A human Score: the note is its reasoning, the reviewer its author; the judge's verdict is not
    # copied into it but read beside it.
    assert (made.source, made.author, made.reasoning, made.detail["reviewer_name"]) == (
        "human",
        user,
        "too long",
        "ana",
    )
    shown = selectors.review_view(review=made, result=judged)
    assert (shown.reviewer_name, shown.note, shown.judge_passed, shown.judge) == (
        "ana",
        "too long",
        True,
        "heuristic:v1",
    )
