"""Demo data for `make run` and the end-to-end tests.

`load_demo_evaluation_data`: what a demo run needs (the demo bot, its rubric, its test set and its
question set); each lives in its own app's demo module, and runs is the first layer that may import
all of them.

`load_demo_runs`: two finished runs of the demo test set and rubric, made by really running the
bots through the run engine in this process: "demo baseline" (the demo bot) and "demo: changed bot"
(its v2 candidate, apps.bots.demo.DEMO_CHANGED_BOT), three attempts of every item each, judged by
the offline judge. Their comparison shows a regression, a fix and a flaky item (docs/demo.md).
"""

import logging

from apps.bots.demo import DEMO_AGENT_ID, DEMO_BOT, DEMO_CHANGED_AGENT_ID, load_demo_bot, load_demo_changed_bot
from apps.core.models import Project
from apps.rubrics.demo import DEMO_RUBRIC, DEMO_RUBRIC_ID, load_demo_rubric
from apps.testsets.demo import DEMO_TEST_SET, DEMO_TEST_SET_ID, load_demo_test_sets

from . import services, sources
from .judging.types import JUDGE_HEURISTIC
from .models import EvaluationResult, EvaluationRun
from .schemas import RunCreateIn

logger = logging.getLogger(__name__)

DEMO_BASELINE_LABEL = "demo baseline"
DEMO_CHANGED_LABEL = "demo: changed bot"
DEMO_REPEATS = 3
# (bot, label) of the demo runs, oldest first: the baseline is the comparison's base.
DEMO_RUNS = ((DEMO_AGENT_ID, DEMO_BASELINE_LABEL), (DEMO_CHANGED_AGENT_ID, DEMO_CHANGED_LABEL))


def load_demo_evaluation_data() -> int:
    """Create what is missing; returns how many objects were created (0 on a re-run)."""
    return load_demo_bot() + load_demo_rubric() + load_demo_test_sets()


def load_demo_runs() -> int:
    """Create the changed bot and the two demo runs where missing (a run is known by its bot and
    label); returns how many objects were created (0 on a re-run)."""
    load_demo_evaluation_data()  # what the runs need; the loader that runs before this one reports it
    created = load_demo_changed_bot()
    missing = [
        (agent_id, label)
        for agent_id, label in DEMO_RUNS
        if not EvaluationRun.objects.filter(project=Project.objects.default(), agent_id=agent_id, label=label).exists()
    ]
    if missing and not demo_data_as_shipped():
        logger.warning(
            "No demo runs: this database holds an older or edited demo bot, test set or rubric, on "
            "which they would not show what docs/demo.md says. Start from an empty database to get them."
        )
        return created
    for agent_id, label in missing:
        data = RunCreateIn(
            agent_id=agent_id,
            test_set_id=DEMO_TEST_SET_ID,
            rubric_id=DEMO_RUBRIC_ID,
            judge_model=JUDGE_HEURISTIC,
            label=label,
            repeats=DEMO_REPEATS,
        )
        run = services.run_create(data=data, project=Project.objects.default())
        run_execute_here(run)
        created += 1
    return created


def _checked(items: list[dict]) -> list:
    """What of the test items decides the verdicts: the messages and what is checked of the answers."""
    return [
        (
            i["name"],
            i["inputs"],
            *(
                (i["expected"].get(key) or [])
                for key in ("success_criteria", "should_use_tools", "should_not_use_tools")
            ),
        )
        for i in items
    ]


def demo_data_as_shipped() -> bool:
    """Whether the demo bot's settings and handbook and the newest demo test set and rubric are the
    ones this code ships. A database seeded by an older evalsite keeps its older demo data (each part
    is created only when missing)."""
    project = Project.objects.default()  # the demo's
    test_set = sources.testset_items(DEMO_TEST_SET_ID, None, project=project)[1]
    rules = sources.rubric_snapshot(DEMO_RUBRIC_ID, None, project=project)[1]["rules"]
    bot = sources.bot_spec(DEMO_AGENT_ID, project=project)
    handbook = [(d["title"], d["text"]) for kb in DEMO_BOT["knowledge_bases"] for d in kb["documents"]]
    return (
        bot.llm_parameters == DEMO_BOT["llm_config"]["parameters"]
        and [(d.title, d.text) for d in bot.documents] == handbook
        and _checked(test_set) == _checked(DEMO_TEST_SET["items"])
        and [(r["id"], r["severity"], r["evaluation_criteria"]) for r in rules]
        == [(r["id"], r["severity"], r["evaluation_criteria"]) for r in DEMO_RUBRIC["rules"]]
    )


def run_execute_here(run: EvaluationRun) -> EvaluationRun:
    """Run `run` to its end in this process, as the workers would: start it, then execute the items
    it queues (each finished item queues the next, and the last one completes the run).

    The engine also hands each queued item to Celery once the surrounding transaction commits;
    those deliveries find their item done and do nothing (services.result_execute)."""
    services.run_start(run_pk=run.pk)
    while queued := list(
        run.results.filter(state=EvaluationResult.State.QUEUED)
        .order_by("attempt", "position")
        .values_list("pk", flat=True)
    ):
        for result_pk in queued:
            services.result_execute(result_pk=result_pk)
    run.refresh_from_db()
    if run.status != EvaluationRun.Status.COMPLETED:
        raise RuntimeError(f"demo run {run.label!r} ended {run.status}, not completed")
    return run
