import pytest

from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory, criterion, verdict_reviews


@pytest.mark.django_db
def test_nul_in_a_console_form_is_400_not_a_database_error(staff_client):
    # The review form reads request.POST directly; on PostgreSQL the NUL reached the INSERT as a 500.
    result = EvaluationResultFactory(
        run=EvaluationRunFactory(), position=0, criteria_scores=[criterion("Mentions 15 days", True)]
    )
    response = staff_client.post(
        f"/console/results/{result.result_id}/",
        {"kind": "criterion", "key": "Mentions 15 days", "passed": "true", "note": "bad\x00"},
    )
    assert response.status_code == 400
    assert not verdict_reviews().exists()
