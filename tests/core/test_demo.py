import pytest
from django.core.management import call_command

from apps.core.demo import demo_loaders
from apps.runs.models import EvaluationRun

DEMO_LINES = [
    "demo traces: 5 new",
    "demo agentic evaluations: 5 new",
    "demo TRACE evaluations: 3 new",
    "demo bot, rubric, test set and question set: 4 new",
    "demo changed bot and runs: 3 new",
]


def test_each_app_registers_its_demo_loader_in_dependency_order():
    # Core cannot import the apps that own the demo data; their AppConfig.ready registered these.
    # The verdicts need the traces they judge, so traces must load before agentic evaluations.
    assert [loader.label for loader in demo_loaders()] == [
        "traces",
        "agentic evaluations",
        "TRACE evaluations",
        "bot, rubric, test set and question set",
        "changed bot and runs",
    ]


@pytest.mark.django_db
def test_seed_demo_prints_what_each_loader_created_and_nothing_on_a_rerun(capsys):
    call_command("seed_demo")
    out = capsys.readouterr().out
    assert [line.strip() for line in out.splitlines() if line.strip().startswith("demo ")] == DEMO_LINES
    # The first dashboard has two finished runs to show: the demo bot's and its changed version's.
    runs = list(EvaluationRun.objects.order_by("created_at", "pk").values_list("label", "status", "completed", "total"))
    assert runs == [("demo baseline", "completed", 15, 15), ("demo: changed bot", "completed", 15, 15)]
    call_command("seed_demo")
    rerun = [line.strip() for line in capsys.readouterr().out.splitlines() if line.strip().startswith("demo ")]
    assert rerun == [line.replace(line.split(": ")[1], "0 new") for line in DEMO_LINES]
    assert EvaluationRun.objects.count() == 2
