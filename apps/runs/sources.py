"""What a run reads from the bots, test sets and rubrics apps, as plain data in the contract's
shapes. Unknown ids or versions raise NotFoundError (from those apps' selectors).

A run may use another bot's test set or rubric: comparing two bots on the same test set is the
point of an A/B run, so ownership is not checked here. The project is: every read names the run's
project, so a run's bot, test set and rubric are of its project, and an id of another project is
NotFoundError, as one that does not exist (never a cross-project run)."""

from apps.bots.adapters import BotDocument, BotSpec, BotTool
from apps.bots.selectors import bot_spec_data
from apps.rubrics.selectors import rubric_version_snapshot, rule_judges_of
from apps.testsets.selectors import dataset_questions, testset_version_items


def bot_spec(agent_id: str, *, project) -> BotSpec:
    data = bot_spec_data(agent_id, project=project)
    return BotSpec(
        agent_id=data["agent_id"],
        name=data["name"],
        adapter=data["adapter"],
        system_prompt=data["system_prompt"],
        llm_provider=data["llm_provider"],
        llm_model=data["llm_model"],
        llm_parameters=data["llm_parameters"],
        endpoint_url=data["endpoint_url"],
        secret=data["secret"],
        tools=tuple(BotTool(t["tool_name"], t["name"], t["type"], t["description"]) for t in data["tools"]),
        documents=tuple(BotDocument(d["knowledge_base"], d["title"], d["text"]) for d in data["documents"]),
    )


def testset_items(test_set_id, version: int | None, *, project) -> tuple[int, list[dict]]:
    return testset_version_items(test_set_id, version, project=project)


def rubric_snapshot(rubric_id, version: int | None, *, project) -> tuple[int, dict]:
    return rubric_version_snapshot(rubric_id, version, project=project)


def rule_judges(rubric_id) -> dict[str, dict]:
    """The rubric's rule judges in force now ({rule_id: {"judge_model", "instructions"}})."""
    return rule_judges_of(rubric_id)


def question_set_items(dataset_id, *, project) -> list[dict]:
    return dataset_questions(dataset_id, project=project)
