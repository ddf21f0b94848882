"""Test set and question set writes. Every TestSetVersion is published through
testset_publish_version (the API's POST, PUT and import, admin saves and restores); the shared
rules of publishing are in apps.core.versioning, this module adds the test set's snapshot shape,
item rows and stable item ids."""

import uuid

from django.db import transaction
from django.db.models import Q

from apps.bots.models import Bot, BotTool
from apps.bots.selectors import bot_named_in_body
from apps.core.errors import InvalidInputError
from apps.core.models import project_pk
from apps.core.versioning.selectors import head_data
from apps.core.versioning.services import version_head_create, version_publish
from apps.traces.models import AgentTrace
from apps.traces.selectors import project_traces

from .models import Dataset, DatasetQuestion, TestItem, TestSet
from .schemas import DatasetIn, FromTraceIn, ItemIn, TestSetContent
from .transfer import parse_test_set_file


def item_snapshot(item: ItemIn, item_id: uuid.UUID) -> dict:
    """One item in the contract's TestSet item shape. Inputs carry the keys the item's type uses,
    plus any other one that was filled in."""
    inputs = item.inputs
    scenario = item.type == "scenario"
    data_inputs = {}
    if not scenario or inputs.message:
        data_inputs["message"] = inputs.message
    if scenario or inputs.persona:
        data_inputs["persona"] = inputs.persona
    if scenario or inputs.initial_message:
        data_inputs["initial_message"] = inputs.initial_message
    if scenario or inputs.max_turns is not None:
        data_inputs["max_turns"] = inputs.max_turns
    if inputs.scripted_turns:
        data_inputs["scripted_turns"] = list(inputs.scripted_turns)
    snapshot = {
        "item_id": str(item_id),
        "type": item.type,
        "name": item.name,
        "inputs": data_inputs,
        "expected": item.expected.model_dump(mode="json"),
        "tags": list(item.tags),
        "priority": item.priority,
    }
    # Only where there is one: items written by hand keep the contract's shape exactly.
    if item.source_session_id is not None:
        snapshot["source_session_id"] = item.source_session_id
    if item.source_result_id is not None:
        snapshot["source_result_id"] = str(item.source_result_id)
    return snapshot


def _assign_item_ids(test_set: TestSet, items: list[ItemIn]) -> list[uuid.UUID]:
    """Items sent without item_id keep the id of the head item with the same name, so clients that
    never send ids still get stable ids (results join to items through them)."""
    given = {i.item_id for i in items if i.item_id is not None}
    by_name: dict[str, list[uuid.UUID]] = {}
    for item_id, name in test_set.items.values_list("item_id", "name"):
        if item_id not in given:
            by_name.setdefault(name, []).append(item_id)
    ids = []
    for item in items:
        if item.item_id is not None:
            ids.append(item.item_id)
        elif by_name.get(item.name):
            ids.append(by_name[item.name].pop(0))
        else:
            ids.append(uuid.uuid4())
    return ids


def testset_tool_warnings(*, agent_id: str, items: list[ItemIn], project) -> list[str]:
    """Tools the items expect (or forbid) that the bot (of `project`: another project's tools are
    never named) does not have: a warning, not an error, since the bot may gain the tool later."""
    known = set(
        BotTool.objects.filter(bot__project=project, bot__agent_id=agent_id).values_list("tool_name", flat=True)
    )
    warnings = []
    for index, item in enumerate(items):
        for field_name in ("should_use_tools", "should_not_use_tools"):
            unknown = [name for name in getattr(item.expected, field_name) if name not in known]
            if unknown:
                warnings.append(
                    f"items[{index}] ({item.name}): expected.{field_name} names "
                    f"{', '.join(repr(n) for n in unknown)}, which bot {agent_id} does not have "
                    f"(its tools: {', '.join(sorted(known)) or 'none'})"
                )
    return warnings


def _content_snapshot(test_set_id, content: TestSetContent, item_ids: list[uuid.UUID]) -> dict:
    return {
        "test_set_id": str(test_set_id),
        "agent_id": content.agent_id,
        "name": content.name,
        "description": content.description,
        "items": [item_snapshot(item, item_id) for item, item_id in zip(content.items, item_ids, strict=True)],
    }


def _write_items(test_set: TestSet, content: TestSetContent, snapshot: dict) -> None:
    test_set.items.all().delete()
    TestItem.objects.bulk_create(
        TestItem(
            test_set=test_set,
            item_id=uuid.UUID(published["item_id"]),
            position=position,
            type=item.type,
            name=item.name,
            message=item.inputs.message,
            persona=item.inputs.persona,
            initial_message=item.inputs.initial_message,
            max_turns=item.inputs.max_turns,
            scripted_turns=item.inputs.scripted_turns,
            success_criteria=item.expected.success_criteria,
            should_use_tools=item.expected.should_use_tools,
            should_not_use_tools=item.expected.should_not_use_tools,
            expected_outcome=item.expected.expected_outcome,
            tags=item.tags,
            priority=item.priority,
            source_session_id=item.source_session_id,
            source_result_id=item.source_result_id,
        )
        for position, (item, published) in enumerate(zip(content.items, snapshot["items"], strict=True))
    )


def _publishing(content: TestSetContent, project) -> dict:
    """What publishing `content` as a test set of `project` (a Project or its id) needs from this
    app: its bot is the project's. Item ids are assigned against the locked head, so the head rows
    take them from the snapshot."""
    project_id = project_pk(project)
    return {
        "snapshot_of": lambda test_set: _content_snapshot(
            test_set.pk, content, _assign_item_ids(test_set, content.items)
        ),
        "head_fields": lambda: {
            "project_id": project_id,
            "bot": bot_named_in_body(content.agent_id, project=project_id),
            "name": content.name,
            "description": content.description,
        },
        "write_rows": lambda test_set, snapshot: _write_items(test_set, content, snapshot),
    }


def testset_create(
    *, content: TestSetContent, project, changelog: str = "", author: str = "", test_set_id=None
) -> TestSet:
    """A new test set of `project` (`test_set_id`, or a fresh uuid when None) and its version 1."""
    return version_head_create(
        model=TestSet, pk=test_set_id, changelog=changelog, author=author, **_publishing(content, project)
    )


def testset_publish_version(
    *,
    test_set: TestSet,
    content: TestSetContent,
    changelog: str = "",
    author: str = "",
    expected_version: int | None = None,
) -> tuple[TestSet, bool]:
    """Make `content` the head and publish it as the next version (see version_publish)."""
    return version_publish(
        head=test_set,
        changelog=changelog,
        author=author,
        expected_version=expected_version,
        **_publishing(content, test_set.project_id),
    )


# A conversation longer than a scenario runs (max_turns 50) keeps its first turns.
MAX_REPLAYED_TURNS = 50
FROM_TRACE_TAG = "from-trace"
REPLAY_PERSONA = "The user of a recorded conversation, saying what they said, turn by turn."


def _conversation_id(trace: AgentTrace) -> str | None:
    """The conversation a trace is one turn of: OTLP's gen_ai.conversation.id (kept in
    metadata.otel), or a `conversation_id` a REST or batch client put in the metadata."""
    otel = trace.metadata.get("otel") if isinstance(trace.metadata, dict) else None
    found = (otel or {}).get("conversation_id") or (trace.metadata or {}).get("conversation_id")
    return found if isinstance(found, str) and found else None


def _user_turns(trace: AgentTrace) -> list[str]:
    """The user's turns up to and including this trace: every trace of its conversation (in its
    project, oldest first), or the trace's own query."""
    conversation = _conversation_id(trace)
    if conversation is None:
        return [trace.user_query]
    turns = (
        project_traces(trace.project_id)
        .filter(
            Q(metadata__otel__conversation_id=conversation) | Q(metadata__conversation_id=conversation),
            start_time__lte=trace.start_time,
        )
        .order_by("start_time", "id")
        .values_list("user_query", flat=True)
    )
    return [turn for turn in turns if turn.strip()][:MAX_REPLAYED_TURNS] or [trace.user_query]


def _item_from_trace(trace: AgentTrace, request: FromTraceIn) -> dict:
    """A test item (ItemIn's fields) that replays what the trace's user asked: one message, or the
    conversation's user turns as a scripted scenario."""
    turns = _user_turns(trace)
    if not turns[-1].strip():
        raise InvalidInputError(f"Trace {trace.session_id} has no user query to make a test item from")
    query = " ".join(turns[-1].split())
    name = f"{query[:80]}{'…' if len(query) > 80 else ''} (trace {trace.session_id[:120]})"
    item = {
        "type": "single_turn",
        "name": name,
        "inputs": {"message": turns[0]},
        "expected": {"expected_outcome": request.expected_outcome, "success_criteria": request.success_criteria},
        "tags": [FROM_TRACE_TAG],
        "source_session_id": trace.session_id,
    }
    if len(turns) > 1:
        item["type"] = "scenario"
        item["inputs"] = {
            "persona": REPLAY_PERSONA,
            "initial_message": turns[0],
            "scripted_turns": turns[1:],
            "max_turns": len(turns),
        }
    return item


@transaction.atomic
def testset_items_from_traces(
    *,
    test_set: TestSet,
    requests: list[FromTraceIn],
    changelog: str = "",
    author: str = "",
    expected_version: int | None = None,
) -> TestSet:
    """Publish the next version of `test_set` with one new item per trace (of the test set's
    project), each keeping its provenance (`source_session_id`). All or nothing: a session id the
    project has no trace for, or one an item of the test set already came from, is a 422 and
    publishes nothing."""
    wanted = [r.session_id for r in requests]
    traces = {t.session_id: t for t in project_traces(test_set.project_id).filter(session_id__in=wanted)}
    unknown = [session_id for session_id in wanted if session_id not in traces]
    if unknown:
        raise InvalidInputError(f"No trace with session id {', '.join(repr(s) for s in unknown)} in this project")
    return testset_items_append(
        test_set=test_set,
        items=[_item_from_trace(traces[r.session_id], r) for r in requests],
        changelog=changelog or f"Added {len(requests)} item{'' if len(requests) == 1 else 's'} from traces",
        author=author,
        expected_version=expected_version,
    )


# An item's provenance keys, and how a refusal names what it came from.
_SOURCES = {"source_session_id": "trace", "source_result_id": "run result"}


@transaction.atomic
def testset_items_append(
    *, test_set: TestSet, items: list[dict], changelog: str, author: str = "", expected_version: int | None = None
) -> TestSet:
    """Publish the next version of `test_set` with its current items and `items` (ItemIn's fields,
    each with its provenance) after them. A trace or result an item of the test set already came from
    is a 422, and nothing is published."""
    # Locked before its items are read: two requests adding at once publish one after the other,
    # neither losing the other's items.
    test_set = TestSet.objects.select_for_update().get(pk=test_set.pk)
    current = head_data(test_set)
    repeated = []
    for key, what in _SOURCES.items():
        already = {str(i[key]): i["name"] for i in current["items"] if i.get(key)}
        repeated += [
            f"{what} {str(i[key])!r} (item {already[str(i[key])]!r})"
            for i in items
            if i.get(key) is not None and str(i[key]) in already
        ]
    if repeated:
        raise InvalidInputError("Already in the test set: " + ", ".join(repeated))
    kept = [{key: value for key, value in item.items() if key in ItemIn.model_fields} for item in current["items"]]
    content = TestSetContent.model_validate(
        {
            "agent_id": current["agent_id"],
            "name": current["name"],
            "description": current["description"],
            "items": kept + items,
        }
    )
    test_set, _published = testset_publish_version(
        test_set=test_set, content=content, changelog=changelog, author=author, expected_version=expected_version
    )
    return test_set


def testset_delete(*, test_set: TestSet) -> None:
    test_set.delete()


def _optional_bot(agent_id: str | None, project) -> Bot | None:
    return None if agent_id is None else bot_named_in_body(agent_id, project=project)


def _write_questions(dataset: Dataset, data: DatasetIn) -> None:
    existing = {q.question: q.question_id for q in dataset.questions.all()}
    given = {q.question_id for q in data.questions if q.question_id}
    dataset.questions.all().delete()
    rows = []
    for position, q in enumerate(data.questions):
        question_id = q.question_id
        if question_id is None:
            kept = existing.get(q.question)
            question_id = kept if kept is not None and kept not in given else uuid.uuid4()
            given.add(question_id)
        rows.append(
            DatasetQuestion(
                dataset=dataset,
                question_id=question_id,
                position=position,
                question=q.question,
                expected_answer=q.expected_answer,
            )
        )
    DatasetQuestion.objects.bulk_create(rows)


@transaction.atomic
def dataset_create(*, data: DatasetIn, project, dataset_id=None) -> Dataset:
    """A question set of `project`; its bot, if it names one, is the project's."""
    dataset = Dataset(
        project_id=project_pk(project),
        name=data.name,
        description=data.description,
        bot=_optional_bot(data.agent_id, project),
    )
    if dataset_id is not None:
        dataset.dataset_id = dataset_id
    dataset.save(force_insert=True)
    _write_questions(dataset, data)
    return dataset


@transaction.atomic
def dataset_update(*, dataset: Dataset, data: DatasetIn) -> Dataset:
    """Replace a question set; questions keep their ids when sent with them or with the same text."""
    dataset = Dataset.objects.select_for_update().get(pk=dataset.pk)
    dataset.name, dataset.description = data.name, data.description
    dataset.bot = _optional_bot(data.agent_id, dataset.project_id)
    dataset.save()
    _write_questions(dataset, data)
    return dataset


def dataset_delete(*, dataset: Dataset) -> None:
    dataset.delete()


def testset_import(
    *,
    raw: bytes,
    fmt: str,
    project,
    test_set: TestSet | None = None,
    agent_id: str | None = None,
    name: str | None = None,
    description: str | None = None,
    author: str = "",
) -> tuple[TestSet, bool, list[str]]:
    """Create a test set from a file, or publish a file's items as the next version of `test_set`.

    `project` is the request's (an existing `test_set` is of it: the view read it there).
    Returns (test_set, published, warnings). Arguments given explicitly win over what a JSON file
    says; an existing test set keeps its bot."""
    parsed = parse_test_set_file(raw, fmt)
    if test_set is not None:
        agent_id = test_set.bot.agent_id
        name = name or parsed.meta.get("name") or test_set.name
        description = description if description is not None else parsed.meta.get("description", test_set.description)
    else:
        agent_id = agent_id or parsed.meta.get("agent_id")
        name = name or parsed.meta.get("name")
        description = description if description is not None else parsed.meta.get("description", "")
        if not agent_id or not name:
            raise InvalidInputError(
                "Importing a new test set needs agent_id and name (as parameters, or in a JSON file's top-level object)"
            )
    content = TestSetContent.model_validate(
        {"agent_id": agent_id, "name": name, "description": description, "items": parsed.items}
    )
    warnings = testset_tool_warnings(agent_id=content.agent_id, items=content.items, project=project)
    changelog = f"Imported from {fmt.upper()}"
    if test_set is None:
        return testset_create(content=content, project=project, changelog=changelog, author=author), True, warnings
    test_set, published = testset_publish_version(
        test_set=test_set, content=content, changelog=changelog, author=author
    )
    return test_set, published, warnings
