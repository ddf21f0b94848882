import pytest

from apps.core.errors import NotFoundError
from apps.core.models import Project
from apps.testsets.models import Dataset
from apps.testsets.selectors import dataset_questions
from tests.bots.factories import BotFactory

pytestmark = pytest.mark.django_db


def body(**change):
    data = {
        "name": "Handbook questions",
        "description": "V1",
        "questions": [
            {"question": "How many PTO days?", "expected_answer": "15"},
            {"question": "Meal allowance?", "expected_answer": "$75"},
        ],
    }
    data.update(change)
    return data


def test_crud(api, staff_api):
    bot = BotFactory()
    created = api.post("/api/v1/datasets", body(agent_id=bot.agent_id), format="json")
    assert created.status_code == 201
    data = created.json()
    assert set(data) == {"dataset_id", "name", "description", "agent_id", "questions", "created_at", "updated_at"}
    assert data["agent_id"] == bot.agent_id
    ids = [q["question_id"] for q in data["questions"]]
    did = data["dataset_id"]
    assert api.get(f"/api/v1/datasets/{did}").json() == data
    assert [d["dataset_id"] for d in api.get("/api/v1/datasets").json()] == [did]
    assert dataset_questions(did, project=Project.objects.default()) == data["questions"]

    updated = api.put(
        f"/api/v1/datasets/{did}",
        body(questions=[{"question": "Meal allowance?", "expected_answer": "$75 per day"}, {"question": "New?"}]),
        format="json",
    )
    assert updated.status_code == 200
    questions = updated.json()["questions"]
    assert questions[0]["question_id"] == ids[1] and questions[1]["question_id"] not in ids
    assert updated.json()["agent_id"] is None

    assert api.delete(f"/api/v1/datasets/{did}").status_code == 403
    assert staff_api.delete(f"/api/v1/datasets/{did}").status_code == 204
    assert api.get(f"/api/v1/datasets/{did}").status_code == 404
    with pytest.raises(NotFoundError):
        dataset_questions(did, project=Project.objects.default())


@pytest.mark.parametrize(
    "change, status",
    [
        ({"questions": [{"expected_answer": "x"}]}, 422),
        ({"questions": [{"question": " "}]}, 422),
        ({"name": ""}, 422),
        ({"agent_id": "64f1c0ffee0000000000dead"}, 422),
        (
            {
                "questions": [
                    {"question": "a", "question_id": "5b0c2f0e-3d4a-4c52-9a51-0c0000000001"},
                    {"question": "b", "question_id": "5b0c2f0e-3d4a-4c52-9a51-0c0000000001"},
                ]
            },
            422,
        ),
    ],
)
def test_bad_input(api, change, status):
    assert api.post("/api/v1/datasets", body(**change), format="json").status_code == status
    assert not Dataset.objects.exists()


def test_unknown_dataset_is_404(api):
    assert api.get("/api/v1/datasets/00000000-0000-0000-0000-000000000000").status_code == 404
    assert api.put("/api/v1/datasets/nope", body(), format="json").status_code == 404
