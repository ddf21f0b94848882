"""Test set and question set writes. test_set_publish_version is the only code that creates a
TestSetVersion: the API's POST, PUT and import, admin saves and restores all go through it."""

import uuid

from django.db import IntegrityError, transaction

from apps.bots.models import Bot, BotTool
from apps.core.errors import ConflictError, InvalidInputError, NotFoundError

from .models import Dataset, DatasetQuestion, TestItem, TestSet, TestSetVersion
from .schemas import DatasetIn, ItemIn, TestSetContent


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
    return {
        "item_id": str(item_id),
        "type": item.type,
        "name": item.name,
        "inputs": data_inputs,
        "expected": item.expected.model_dump(mode="json"),
        "tags": list(item.tags),
        "priority": item.priority,
    }


def _bot(agent_id: str) -> Bot:
    bot = Bot.objects.filter(agent_id=agent_id).first()
    if bot is None:
        raise InvalidInputError(f"agent_id {agent_id} does not name a bot")
    return bot


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


def tool_warnings(agent_id: str, items: list[ItemIn]) -> list[str]:
    """Tools the items expect (or forbid) that the bot does not have: a warning, not an error,
    since the bot may gain the tool later."""
    known = set(BotTool.objects.filter(bot__agent_id=agent_id).values_list("tool_name", flat=True))
    warnings = []
    for index, item in enumerate(items):
        for field_name in ("should_use_tools", "should_not_use_tools"):
            unknown = [name for name in getattr(item.expected, field_name) if name not in known]
            if unknown:
                warnings.append(
                    f"items[{index}] ({item.name}): expected.{field_name} names "
                    f"{', '.join(repr(n) for n in unknown)}, which bot {agent_id} does not have "
                    f"(its tools: {', '.join(sorted(known)) or 'none'})")
    return warnings


def _content_snapshot(test_set_id, content: TestSetContent, item_ids: list[uuid.UUID]) -> dict:
    return {
        "test_set_id": str(test_set_id),
        "agent_id": content.agent_id,
        "name": content.name,
        "description": content.description,
        "items": [item_snapshot(item, item_id) for item, item_id in zip(content.items, item_ids)],
    }


def _content_of(snapshot: dict) -> dict:
    return {k: v for k, v in snapshot.items() if k not in ("version", "created_at", "updated_at")}


def _write_head(test_set: TestSet, content: TestSetContent, item_ids: list[uuid.UUID], bot: Bot) -> None:
    test_set.agent = bot
    test_set.name = content.name
    test_set.description = content.description
    test_set.items.all().delete()
    TestItem.objects.bulk_create(
        TestItem(
            test_set=test_set, item_id=item_id, position=position, type=item.type, name=item.name,
            message=item.inputs.message, persona=item.inputs.persona, initial_message=item.inputs.initial_message,
            max_turns=item.inputs.max_turns, scripted_turns=item.inputs.scripted_turns,
            success_criteria=item.expected.success_criteria, should_use_tools=item.expected.should_use_tools,
            should_not_use_tools=item.expected.should_not_use_tools,
            expected_outcome=item.expected.expected_outcome, tags=item.tags, priority=item.priority,
        )
        for position, (item, item_id) in enumerate(zip(content.items, item_ids))
    )


@transaction.atomic
def test_set_create(*, content: TestSetContent, changelog: str = "", author: str = "",
                    test_set_id=None) -> TestSet:
    bot = _bot(content.agent_id)
    test_set = TestSet(agent=bot, name=content.name)
    if test_set_id is not None:
        test_set.test_set_id = test_set_id
    test_set.save(force_insert=True)
    test_set_publish_version(test_set=test_set, content=content, changelog=changelog or "Created", author=author)
    test_set.refresh_from_db()
    return test_set


def test_set_publish_version(*, test_set: TestSet, content: TestSetContent, changelog: str = "", author: str = "",
                             expected_version: int | None = None) -> tuple[TestSet, bool]:
    """Make `content` the head and publish it as the next version; (test_set, published).

    Content equal to the current version publishes nothing; an edit based on an older version
    than the current one is a ConflictError."""
    with transaction.atomic():
        try:
            locked = TestSet.objects.select_for_update().get(pk=test_set.pk)
        except TestSet.DoesNotExist:
            raise NotFoundError(f"No test set {test_set.pk}") from None
        if expected_version is not None and expected_version != locked.current_version:
            raise ConflictError(
                f"Test set {locked.pk} is at version {locked.current_version}; this edit is based on version "
                f"{expected_version}. Reload it and apply your change again.")
        item_ids = _assign_item_ids(locked, content.items)
        snapshot = _content_snapshot(locked.pk, content, item_ids)
        if locked.current_version:
            current = TestSetVersion.objects.get(test_set=locked, version=locked.current_version)
            if _content_of(current.snapshot) == snapshot:
                return locked, False
        bot = _bot(content.agent_id)
        _write_head(locked, content, item_ids, bot)
        locked.current_version += 1
        locked.save()
        try:
            with transaction.atomic():
                TestSetVersion.objects.create(test_set=locked, version=locked.current_version,
                                              snapshot={**snapshot, "version": locked.current_version},
                                              changelog=changelog, author=author)
        except IntegrityError:
            raise ConflictError(f"Version {locked.current_version} of test set {locked.pk} was published "
                                "concurrently; reload and try again.") from None
    return locked, True


def test_set_restore_version(*, test_set: TestSet, version: int, author: str = "") -> tuple[TestSet, bool]:
    old = TestSetVersion.objects.filter(test_set=test_set, version=version).first()
    if old is None:
        raise NotFoundError(f"Test set {test_set.pk} has no version {version}")
    content = TestSetContent.model_validate(_content_of(old.snapshot))
    return test_set_publish_version(test_set=test_set, content=content, changelog=f"Restored version {version}",
                                    author=author)


def test_set_delete(*, test_set: TestSet) -> None:
    test_set.delete()


def _optional_bot(agent_id: str | None) -> Bot | None:
    return None if agent_id is None else _bot(agent_id)


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
        rows.append(DatasetQuestion(dataset=dataset, question_id=question_id, position=position, question=q.question,
                                    expected_answer=q.expected_answer))
    DatasetQuestion.objects.bulk_create(rows)


@transaction.atomic
def dataset_create(*, data: DatasetIn, dataset_id=None) -> Dataset:
    dataset = Dataset(name=data.name, description=data.description, agent=_optional_bot(data.agent_id))
    if dataset_id is not None:
        dataset.dataset_id = dataset_id
    dataset.save(force_insert=True)
    _write_questions(dataset, data)
    return dataset


@transaction.atomic
def dataset_update(*, dataset: Dataset, data: DatasetIn) -> Dataset:
    """Replace a question set; questions keep their ids when sent with them or with the same text."""
    dataset = Dataset.objects.select_for_update().get(pk=dataset.pk)
    dataset.name, dataset.description, dataset.agent = data.name, data.description, _optional_bot(data.agent_id)
    dataset.save()
    _write_questions(dataset, data)
    return dataset


def dataset_delete(*, dataset: Dataset) -> None:
    dataset.delete()


# A test module importing these must not have pytest collect them as tests.
for _service in (test_set_create, test_set_publish_version, test_set_restore_version, test_set_delete):
    _service.__test__ = False


def test_set_import(*, raw: bytes, fmt: str, test_set: TestSet | None = None, agent_id: str | None = None,
                    name: str | None = None, description: str | None = None,
                    author: str = "") -> tuple[TestSet, bool, list[str]]:
    """Create a test set from a file, or publish a file's items as the next version of `test_set`.

    Returns (test_set, published, warnings). Arguments given explicitly win over what a JSON file
    says; an existing test set keeps its bot."""
    from .transfer import parse_test_set_file

    parsed = parse_test_set_file(raw, fmt)
    if test_set is not None:
        agent_id = test_set.agent.agent_id
        name = name or parsed.meta.get("name") or test_set.name
        description = description if description is not None else parsed.meta.get("description",
                                                                                   test_set.description)
    else:
        agent_id = agent_id or parsed.meta.get("agent_id")
        name = name or parsed.meta.get("name")
        description = description if description is not None else parsed.meta.get("description", "")
        if not agent_id or not name:
            raise InvalidInputError("Importing a new test set needs agent_id and name (as parameters, or in a "
                                    "JSON file's top-level object)")
    content = TestSetContent.model_validate(
        {"agent_id": agent_id, "name": name, "description": description, "items": parsed.items})
    warnings = tool_warnings(content.agent_id, content.items)
    changelog = f"Imported from {fmt.upper()}"
    if test_set is None:
        return test_set_create(content=content, changelog=changelog, author=author), True, warnings
    test_set, published = test_set_publish_version(test_set=test_set, content=content, changelog=changelog,
                                                   author=author)
    return test_set, published, warnings


test_set_import.__test__ = False
